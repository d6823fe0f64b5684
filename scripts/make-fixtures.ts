/** Placeholder: replaced by the fixture generator of the OCR engine tests. */
export async function generateFixtures(): Promise<void> {}
