"use client";

/** Shown when the settings cannot be loaded, most often because the store (Redis) is unreachable. */
export default function SettingsError({ reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <section className="stack">
      <h1>Settings are unavailable</h1>
      <p>Your keys and credits could not be loaded right now. Please try again in a moment.</p>
      <p>
        <button type="button" onClick={reset}>
          Try again
        </button>
      </p>
    </section>
  );
}
