"use client";

import { useRouter } from "next/navigation";
import { useEffect } from "react";

/**
 * While a job is queued or running, the settings page asks the server for a fresh render every few seconds (the page
 * stays server-rendered; client state such as a key just shown is kept). Rendered only while a job is at work, so the
 * refreshing stops by itself when the last one ends. Hidden tabs are not refreshed.
 */
export function JobsRefresh({ everyMs = 3_000 }: { everyMs?: number }) {
  const router = useRouter();
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") router.refresh();
    }, everyMs);
    return () => clearInterval(timer);
  }, [router, everyMs]);
  return null;
}
