/**
 * Processor time per stage of reading a page, for `npm run bench -- --profile` (docs/benchmark.md). An engine
 * process reads one page at a time, so the process's own CPU clock (`process.cpuUsage()`: getrusage over every
 * thread of the process, including Tesseract's wasm thread and onnxruntime's, live or exited) read at the edges of a
 * stage is that stage's cost. Stages nest (the text-size analysis of a page turned upright happens inside the
 * orientation stage): each stage is charged its own time, without the stages inside it.
 *
 * Nothing is measured unless a job asked for it (`startProfile`): otherwise each `profiled` call is one test of a
 * variable.
 */

/** The stages a page's processor time is split into (milliseconds of CPU, user + system). */
export const profileStages = [
  /** Decoding an image file (JPEG/PNG/WebP) into a drawable source. */
  "decode",
  /** Drawing a PDF page at 300 DPI (pdf.js and Skia). */
  "pdf-render",
  /** Finding the photographed sheet and painting what lies around it (lib/ocr/engine/paper.ts). */
  "paper",
  /** Drawing the bounded analysis copy and finding its glyphs (text height, ink, content box). */
  "text-size",
  /** Drawing the raster Tesseract reads at the chosen scale (and crop). */
  "rescale",
  /** Line direction, skew and which way up, and drawing a turned or straightened page. */
  "orientation",
  /** Starting a Tesseract thread (wasm instance and language data) when the process had none. */
  "tesseract-start",
  /** Tesseract's first pass (automatic page segmentation). */
  "tesseract-first",
  /** The re-read as a single block when the words covered too little of the ink. */
  "block-reread",
  /** The 1.5× rescue pass on a page read with low confidence (drawing its raster included). */
  "rescue",
  /** The re-read in the language the first reading was found to be in (all its passes). */
  "language-reread",
  /** Reading the page upside down too (a poor reading the glyphs did not call upright). */
  "flip-probe",
  /** Stopping Tesseract's idle thread before PaddleOCR. */
  "tesseract-shed",
  /** Creating (and releasing) PaddleOCR's two onnxruntime sessions. */
  "paddle-load",
  /** PaddleOCR's text detector (strips, probability map, boxes). */
  "paddle-detect",
  /** PaddleOCR's line recognizer over the detected boxes Tesseract did not read with confidence. */
  "paddle-recognize",
  /** Putting the page's lines in reading order (columns, rows): lib/ocr/engine/reading-order.ts. */
  "layout",
  /** Finding tables (markdown), measured where the document is rendered. */
  "tables",
  /** Rendering the page as markdown (tables included), measured where the document is rendered. */
  "render",
  /** The rest of the job: messages, TSV parsing, choosing readings, mapping boxes back. */
  "other",
] as const;

export type ProfileStage = (typeof profileStages)[number];

/** CPU milliseconds per stage of one page, and `total`: the whole job's. */
export type StageProfile = Partial<Record<ProfileStage | "total", number>>;

interface Frame {
  stage: ProfileStage;
  /** process.cpuUsage() at entry, microseconds (user + system). */
  start: number;
  /** Microseconds charged to stages inside this one. */
  inner: number;
  /** The stage is charged everything inside it (a re-read's own passes are not split out). */
  whole: boolean;
}

interface Active {
  profile: StageProfile;
  start: number;
  stack: Frame[];
}

let active: Active | null = null;

function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** Start measuring a job (the engine process runs one job at a time). */
export function startProfile(): void {
  active = { profile: {}, start: cpuMicros(), stack: [] };
}

/** Stop measuring and return the job's profile: what no stage claimed is `other`. */
export function takeProfile(): StageProfile | undefined {
  if (!active) return undefined;
  const { profile, start } = active;
  active = null;
  const total = (cpuMicros() - start) / 1000;
  const staged = profileStages.reduce((sum, stage) => sum + (profile[stage] ?? 0), 0);
  profile.other = Math.max(0, total - staged);
  profile.total = total;
  for (const key of Object.keys(profile) as Array<keyof StageProfile>)
    profile[key] = Math.round(profile[key]! * 10) / 10;
  return profile;
}

function enter(stage: ProfileStage, whole = false): Frame | null {
  if (!active || active.stack.some((f) => f.whole)) return null;
  const frame: Frame = { stage, start: cpuMicros(), inner: 0, whole };
  active.stack.push(frame);
  return frame;
}

function leave(frame: Frame | null): void {
  if (!frame || !active) return;
  const stack = active.stack;
  const index = stack.lastIndexOf(frame);
  if (index < 0) return;
  stack.splice(index, 1);
  const spent = cpuMicros() - frame.start;
  const own = Math.max(0, spent - frame.inner);
  active.profile[frame.stage] = (active.profile[frame.stage] ?? 0) + own / 1000;
  // The enclosing stage is charged without this one.
  const outer = stack[index - 1];
  if (outer) outer.inner += spent;
}

/** Run `work` as `stage` (synchronous work). */
export function profiled<T>(stage: ProfileStage, work: () => T): T {
  const frame = enter(stage);
  try {
    return work();
  } finally {
    leave(frame);
  }
}

/**
 * Run `work` as `stage` (asynchronous work; stages of one job do not overlap). `whole`: the stages inside it are not
 * split out (the language re-read is charged its text-size, Tesseract and rescue work alike).
 */
export async function profiledAsync<T>(stage: ProfileStage, work: () => Promise<T>, whole = false): Promise<T> {
  const frame = enter(stage, whole);
  try {
    return await work();
  } finally {
    leave(frame);
  }
}
