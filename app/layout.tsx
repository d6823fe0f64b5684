import type { Metadata, Viewport } from "next";
import Link from "next/link";
import { connection } from "next/server";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "OCR API", template: "%s · OCR API" },
  description: "Turn images and PDFs into text over REST or MCP.",
};

export const viewport: Viewport = { width: "device-width", initialScale: 1 };

export default async function RootLayout({ children }: Readonly<{ children: React.ReactNode }>) {
  // Every page renders per request: its scripts carry the nonce of the request's Content-Security-Policy (proxy.ts).
  await connection();
  return (
    <html lang="en">
      <body>
        <header className="site-header">
          <Link href="/" className="brand">
            OCR API
          </Link>
          <nav aria-label="Main">
            <Link href="/docs">Docs</Link>
            <Link href="/settings">Settings</Link>
          </nav>
        </header>
        <main>{children}</main>
      </body>
    </html>
  );
}
