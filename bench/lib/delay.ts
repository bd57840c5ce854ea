/** A plain real-time pause for the bench harness itself (never used to pace a limiter). */
export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
