#!/usr/bin/env node
// The `pier` command. Sources are TypeScript run through tsx, so `npx pier` works right after
// `npm ci` with no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/index.ts');
