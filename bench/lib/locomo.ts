/** What the bench commands share about LoCoMo (`../shared/bench-data/locomo10.json`). */

const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];

/** A session start, e.g. "1:56 pm on 8 May, 2023" → epoch ms, read as UTC (LoCoMo gives no zone). */
export function parseLocomoDate(text: string): number {
  const match = /^(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})$/i.exec(text.trim());
  if (match === null) throw new Error(`unrecognized LoCoMo date: ${text}`);
  const [, h, m, ampm, day, month, year] = match as unknown as string[];
  const monthIndex = MONTHS.indexOf(String(month).toLowerCase());
  if (monthIndex < 0) throw new Error(`unrecognized month in ${text}`);
  const hour = (Number(h) % 12) + (String(ampm).toLowerCase() === 'pm' ? 12 : 0);
  return Date.UTC(Number(year), monthIndex, Number(day), hour, Number(m));
}
