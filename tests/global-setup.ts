import { generateFixtures } from "../scripts/make-fixtures";

/** Runs once per `vitest run`: writes the generated fixtures (text rendered with a committed font, PDFs built
 * with pdf-lib, hostile files) under tests/.generated/. Cheap when they are already there. */
export default async function setup(): Promise<void> {
  await generateFixtures();
}
