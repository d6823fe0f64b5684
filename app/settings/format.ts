const dateTime = new Intl.DateTimeFormat("en-GB", {
  dateStyle: "medium",
  timeStyle: "short",
  timeZone: "UTC",
});

/** `21 Nov 2026, 05:23` in UTC — rendered on the server, which cannot know the reader's zone (headers say UTC). */
export function formatDateTime(iso: string): string {
  return dateTime.format(new Date(iso));
}

/** `+100`, `−3` (a real minus sign), `0`. */
export function formatDelta(delta: number): string {
  return delta > 0 ? `+${delta}` : delta < 0 ? `−${Math.abs(delta)}` : "0";
}
