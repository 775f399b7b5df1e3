// The shields-style version badge for vendors' READMEs: the newest dated release
// of the changelog in badgeColor (falling back to color1), made by badge-maker.
import { makeBadge } from 'badge-maker';

export function versionBadge(label: string, version: string | null, color: string): string {
  return makeBadge({
    label: label.length > 40 ? `${label.slice(0, 39)}…` : label,
    message: version ?? 'no release',
    color: version ? color : 'lightgrey',
    style: 'flat',
  });
}
