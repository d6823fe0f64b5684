import { afterEach, describe, expect, it, vi } from "vitest";
import { isOcrError } from "@/lib/ocr/model/ocr-error";
import { openPdf } from "@/lib/ocr/engine/pdf";

/*
 * On a Node older than pdf.js supports, a PDF is an engine error (`engine_failed`, with the versions in the cause for
 * the log), never "corrupt or truncated".
 */
describe("pdf.js on an unsupported Node", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("is engine_failed naming the versions, not unreadable", async () => {
    const versions = { ...process.versions, node: "20.20.2" };
    vi.spyOn(process, "versions", "get").mockReturnValue(versions);
    const error = await openPdf(new TextEncoder().encode("%PDF-1.7\n")).catch((caught: unknown) => caught);
    expect(isOcrError(error)).toBe(true);
    expect(error).toMatchObject({ code: "engine_failed", message: "The PDF engine cannot run on this server" });
    expect(String((error as { cause?: unknown }).cause)).toContain(
      "pdf.js needs Node.js 22.13 or newer; this engine runs on Node.js 20.20.2",
    );
  });
});
