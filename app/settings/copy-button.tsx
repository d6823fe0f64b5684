"use client";

import { useState } from "react";

/** Copies `text` to the clipboard. Without JavaScript (or clipboard access) the key stays selectable. */
export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [copied, setCopied] = useState<"idle" | "copied" | "failed">("idle");
  return (
    <button
      type="button"
      className="secondary"
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
