import { ApiError } from "@/lib/api/errors";

/**
 * Passwords that guessing tools try first: the ~30 000 most common ones from leaked-password corpora, as kept by
 * zxcvbn-ts (`@zxcvbn-ts/language-common`, MIT), an npm package — read offline, never fetched. Loaded on the first
 * sign-up (it takes a few milliseconds and ~2 MB), not when the server starts.
 */
let common: Promise<Set<string>> | undefined;

function commonPasswords(): Promise<Set<string>> {
  common ??= import("@zxcvbn-ts/language-common").then(({ dictionary }) => {
    const words = dictionary["passwords-common"];
    return new Set(Array.isArray(words) ? words.map((word) => String(word).toLowerCase()) : []);
  });
  return common;
}

/**
 * Refuse a password that is on the common list (compared case-insensitively, as guessers vary case), or that is the
 * account's own e-mail address or its name part. Throws `invalid_request` with a message the sign-up form shows.
 */
export async function rejectCommonPassword(password: string, email: string): Promise<void> {
  const candidate = password.normalize("NFKC").trim().toLowerCase();
  const local = email.split("@")[0] ?? "";
  if (candidate === email || (local.length >= 4 && candidate === local)) {
    throw new ApiError("invalid_request", "Choose a password that is not your e-mail address.");
  }
  if ((await commonPasswords()).has(candidate)) {
    throw new ApiError(
      "invalid_request",
      "That password is one of the most common ones, which attackers try first. Choose another (a few unrelated words work well).",
    );
  }
}
