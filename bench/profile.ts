/**
 * `npm run bench -- --profile`: processor time per stage of every page (docs/benchmark.md#profile). The engine
 * processes measure their own stages (lib/ocr/model/profile.ts) and send them back with each page; table detection and the
 * markdown rendering are measured here, where a document is rendered (the server's thread in the service).
 */
import { detectTables } from "../lib/ocr/render/tables";
import { pageAsRead } from "../lib/ocr/model/page-turn";
import { profileStages, type ProfileStage, type StageProfile } from "../lib/ocr/model/profile";
import { render } from "../lib/ocr";
import type { ExtractedDocument } from "../lib/ocr/model";

export interface PageProfile {
  file: string;
  /** The corpus sub-folder the file is in (sroie, funsd, …). */
  source: string;
  page: number;
  /** Which recognizer's reading was kept, and whether a second one read it (`tesseract`, `paddle`, `tesseract/2`). */
  engine: string;
  profile: StageProfile;
}

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * The OCR pages of a document with their profiles, table detection and markdown rendering measured here (each
 * several times over when it is quick, for a resolution better than the clock's).
 */
export function profileDocument(file: string, source: string, doc: ExtractedDocument): PageProfile[] {
  const rows: PageProfile[] = [];
  for (const page of doc.pages) {
    const engineProfile = page.trace?.profile;
    if (!engineProfile) continue; // a text-layer or blank page of a PDF: no OCR
    const repeat = 5;
    let t = cpuMs();
    for (let i = 0; i < repeat; i++) detectTables(pageAsRead(page));
    const tables = (cpuMs() - t) / repeat;
    t = cpuMs();
    for (let i = 0; i < repeat; i++) render({ pages: [page], pageCount: 1 }, "markdown");
    const markdown = (cpuMs() - t) / repeat;
    const rendering = Math.max(0, markdown - tables);
    const profile: StageProfile = { ...engineProfile, tables: round1(tables), render: round1(rendering) };
    profile.total = round1((engineProfile.total ?? 0) + tables + rendering);
    const second = page.trace?.second;
    rows.push({
      file,
      source,
      page: page.number,
      engine: `${page.engine ?? "tesseract"}${second ? "/2" : ""}`,
      profile,
    });
  }
  return rows;
}

const round1 = (v: number) => Math.round(v * 10) / 10;

/** Short column names for the stages. */
const COLUMN: Record<ProfileStage | "total", string> = {
  decode: "decode",
  "pdf-render": "pdfdraw",
  paper: "paper",
  "text-size": "txtsize",
  rescale: "rescale",
  orientation: "orient",
  "tesseract-start": "tstart",
  "tesseract-first": "tfirst",
  "block-reread": "block",
  rescue: "rescue",
  "language-reread": "lang",
  "flip-probe": "flip",
  "tesseract-shed": "shed",
  "paddle-load": "pload",
  "paddle-detect": "pdetect",
  "paddle-recognize": "precog",
  layout: "layout",
  tables: "tables",
  render: "render",
  other: "other",
  total: "total",
};

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(header), ...rows.map(line)].join("\n");
}

/** The per-page table, then the mean per page by corpus source and overall (CPU ms). */
export function formatProfiles(pages: PageProfile[]): string {
  const keys = [...profileStages, "total"] as const;
  const used = keys.filter((k) => k === "total" || pages.some((p) => (p.profile[k] ?? 0) >= 0.5));
  const ms = (v: number | undefined) => (v === undefined || v < 0.5 ? "-" : v.toFixed(0));
  const perPage = table(
    ["page (CPU ms)", "engine", ...used.map((k) => COLUMN[k])],
    pages.map((p) => [`${p.file} p${p.page}`, p.engine, ...used.map((k) => ms(p.profile[k]))]),
  );
  const groups = new Map<string, PageProfile[]>();
  for (const p of pages) groups.set(p.source, [...(groups.get(p.source) ?? []), p]);
  const meanRow = (name: string, list: PageProfile[]) => [
    name,
    String(list.length),
    ...used.map((k) => ms(list.reduce((s, p) => s + (p.profile[k] ?? 0), 0) / list.length)),
    (list.reduce((s, p) => s + (p.profile.total ?? 0), 0) / 1000).toFixed(2),
  ];
  const bySource = table(
    ["source (mean CPU ms/page)", "pages", ...used.map((k) => COLUMN[k]), "sum s"],
    [
      ...[...groups.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, list]) => meanRow(name, list)),
      meanRow("all", pages),
    ],
  );
  const total = pages.reduce((s, p) => s + (p.profile.total ?? 0), 0);
  const share = used
    .filter((k) => k !== "total")
    .map((k) => [k, pages.reduce((s, p) => s + (p.profile[k] ?? 0), 0)] as const)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${COLUMN[k]} ${((100 * v) / total).toFixed(1)}%`)
    .join(", ");
  return `${perPage}\n\n${bySource}\n\nshare of CPU: ${share}`;
}
