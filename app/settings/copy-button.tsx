"use client";

import { useState } from "react";

/**
 * Copies `text` to the clipboard. Without JavaScript (or clipboard access) the text stays selectable. `ariaLabel`
 * names the button for assistive technology when several sit on one page ("Copy the curl command"); it should
 * start with the visible label.
 */
export function CopyButton({ text, label = "Copy", ariaLabel }: { text: string; label?: string; ariaLabel?: string }) {
  const [copied, setCopied] = useState<"idle" | "copied" | "failed">("idle");
  return (
    <button
      type="button"
      className="secondary"
      aria-label={ariaLabel}
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setCopied("copied");
        } catch {
          setCopied("failed");
        }
      }}
    >
      <span aria-live="polite">{copied === "copied" ? "Copied" : copied === "failed" ? "Select and copy" : label}</span>
    </button>
  );
}
