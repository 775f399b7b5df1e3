// Text on vendor colours must stay readable whatever they pick: choose light or dark text by
// WCAG 2.2 contrast ratio (§1.4.3, relative luminance per sRGB).
export const LIGHT_TEXT = '#ffffff';
export const DARK_TEXT = '#111418';

/** [r, g, b] 0–255 of "#rgb" or "#rrggbb"; null for anything else. */
export function parseHex(color: string | undefined): [number, number, number] | null {
  const m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(color ?? '');
  if (!m?.[1]) return null;
  const hex = m[1].length === 3 ? [...m[1]].map((c) => c + c).join('') : m[1];
  return [0, 2, 4].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)) as [number, number, number];
}

export function relativeLuminance([r, g, b]: [number, number, number]): number {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

export function contrastRatio(a: string, b: string): number {
  const la = relativeLuminance(parseHex(a) ?? [0, 0, 0]);
  const lb = relativeLuminance(parseHex(b) ?? [0, 0, 0]);
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

/**
 * The text colour (light or dark) whose worst contrast over all `backgrounds` is highest, so
 * text on a gradient stays readable at both ends.
 */
export function textColorOn(backgrounds: readonly string[]): string {
  const worst = (text: string) => Math.min(...backgrounds.map((b) => contrastRatio(text, b)));
  return worst(LIGHT_TEXT) >= worst(DARK_TEXT) ? LIGHT_TEXT : DARK_TEXT;
}

/** Normalises "#abc" to "#aabbcc" (lower case), or returns the fallback. */
export function normalizeHex(color: string | undefined, fallback: string): string {
  const rgb = parseHex(color);
  return rgb ? `#${rgb.map((c) => c.toString(16).padStart(2, '0')).join('')}` : fallback;
}

/** WCAG 2.2 AA for normal text (§1.4.3). */
export const MIN_CONTRAST = 4.5;

function blend(color: string, over: [number, number, number], alpha: number): string {
  const rgb = parseHex(color) ?? [0, 0, 0];
  return `#${rgb.map((c, i) => Math.round(c * (1 - alpha) + (over[i] ?? 0) * alpha).toString(16).padStart(2, '0')).join('')}`;
}

/**
 * Text colour for a gradient, plus a translucent veil laid between background and text when
 * neither light nor dark text reaches AA on every stop (e.g. #123456 → #abcdef): the
 * smallest veil that does, darkening for light text or lightening for dark text.
 */
export function readableOn(backgrounds: readonly string[]): { text: string; scrim: string | null } {
  const text = textColorOn(backgrounds);
  const worst = (bgs: readonly string[]) => Math.min(...bgs.map((b) => contrastRatio(text, b)));
  if (worst(backgrounds) >= MIN_CONTRAST) return { text, scrim: null };
  const over: [number, number, number] = text === LIGHT_TEXT ? [0, 0, 0] : [255, 255, 255];
  for (let alpha = 0.1; alpha < 0.95; alpha += 0.05) {
    if (worst(backgrounds.map((b) => blend(b, over, alpha))) >= MIN_CONTRAST) {
      return { text, scrim: `rgb(${over.join(' ')} / ${Math.round(alpha * 100)}%)` };
    }
  }
  return { text, scrim: `rgb(${over.join(' ')} / 95%)` };
}
