import { after } from "next/server";

/** Run `task` after the response when Next can (`after`: on Vercel it keeps the function alive); otherwise now. */
export function afterResponse(task: () => Promise<void>): void {
  try {
    after(task);
  } catch {
    void task(); // outside a Next request scope (tests, scripts)
  }
}
