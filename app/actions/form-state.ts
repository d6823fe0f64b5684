import { isApiError } from "@/lib/api/errors";

/** What a form shows after a failed submission. */
export interface FormError {
  error?: string;
}

/** A user-facing line for anything a form action throws; unexpected errors are logged, not shown. */
export function formErrorMessage(error: unknown, context: string): string {
  if (isApiError(error) && error.code !== "internal_error") return error.message;
  console.error(`[${context}]`, error instanceof Error ? (error.stack ?? error.message) : error);
  return "Something went wrong. Please try again.";
}
