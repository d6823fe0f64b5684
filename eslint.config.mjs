import { defineConfig, globalIgnores } from "eslint/config";
import nextVitals from "eslint-config-next/core-web-vitals";
import nextTs from "eslint-config-next/typescript";

export default defineConfig([
  ...nextVitals,
  ...nextTs,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-console": ["warn", { allow: ["warn", "error", "info"] }],
      // Errors cross bundles (routes, instrumentation, the engine): recognise them with isApiError, never instanceof.
      "no-restricted-syntax": [
        "error",
        {
          selector: "BinaryExpression[operator='instanceof'][right.name='ApiError']",
          message: "Use isApiError(error): each bundle has its own copy of the ApiError class.",
        },
      ],
    },
  },
  {
    files: ["scripts/**", "bench/**", "cli/**"],
    rules: { "no-console": "off" },
  },
  globalIgnores([".next/**", ".next-test/**", "out/**", "build/**", "next-env.d.ts", "tests/.generated/**", "tests/artifacts/**", "cli/dist/**"]),
]);
