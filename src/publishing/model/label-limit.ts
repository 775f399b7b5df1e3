/**
 * Longest label: the one rule, used by the label check (files/tree.ts `isLabel`) and by the
 * database columns that hold labels (migrations.ts). It sits on the ground floor so that the
 * migrations, which everything stands on, need not reach up into the file tree for it.
 */
export const MAX_LABEL_LENGTH = 128;
