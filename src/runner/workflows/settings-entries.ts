/**
 * The `settings.xml` files of an uploaded workflow archive that may belong to configuration
 * nodes: read from the zip (yauzl: entries one at a time), bounded in entries, bytes per file,
 * bytes in all and bytes kept for parsing, and picked by a check of the raw text that is linear
 * in its length (configuration-factory.ts). Only these are parsed. All of it runs in the worker
 * of isolated-declared.ts, the zip's directory too: reading it entry by entry is thousands of
 * small reads for an archive of many entries, work an uploader chooses. An archive that cannot be
 * read gives what was read before the damage (the upload itself is not refused for it).
 */
import yauzl from 'yauzl';
import { namesConfigurationFactory } from './configuration-factory.js';

/** Entries looked at: a workflow has a folder per node, each with a few files. */
export const MAX_ENTRIES = 20_000;
/** A configuration node's settings are a few kilobytes; a bigger file is not one. */
export const MAX_SETTINGS_BYTES = 256 * 1024;
/** `settings.xml` bytes read in all (each is scanned once, linearly). */
export const MAX_TOTAL_BYTES = 16 * 1024 * 1024;
/** XML handed to the parser in all: what the worker holds and parses for one version. */
export const MAX_PARSED_BYTES = 2 * 1024 * 1024;

/** Opens the archive for reading its entries one at a time; null when it is no zip. */
async function openZip(file: string): Promise<yauzl.ZipFile | null> {
  try {
    return await new Promise<yauzl.ZipFile>((resolve, reject) => yauzl.open(file, { lazyEntries: true, strictFileNames: false }, (err, z) => (err || !z ? reject(err) : resolve(z))));
  } catch {
    return null;
  }
}

const SETTINGS = /(?:^|\/)settings\.xml$/;

export async function readConfigurationSettings(file: string): Promise<string[]> {
  const zip = await openZip(file);
  if (!zip) return [];
  const picked: string[] = [];
  let seen = 0;
  let read = 0;
  let kept = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', resolve);
      zip.on('entry', (e: yauzl.Entry) => {
        seen++;
        if (seen > MAX_ENTRIES || kept >= MAX_PARSED_BYTES || read >= MAX_TOTAL_BYTES) return resolve();
        const wanted = SETTINGS.test(e.fileName) && e.uncompressedSize <= MAX_SETTINGS_BYTES && read + e.uncompressedSize <= MAX_TOTAL_BYTES;
        if (!wanted) return zip.readEntry();
        zip.openReadStream(e, (err, stream) => {
          if (err || !stream) return zip.readEntry();
          const chunks: Buffer[] = [];
          let size = 0;
          // A failed stream emits 'error' and then 'close': the next entry is asked for once.
          let next = false;
          const readNext = () => {
            if (next) return;
            next = true;
            zip.readEntry();
          };
          stream.on('data', (c: Buffer) => {
            size += c.length;
            // The header's size is the uploader's word: the bytes are counted as they come.
            if (size > MAX_SETTINGS_BYTES || read + size > MAX_TOTAL_BYTES) stream.destroy();
            else chunks.push(c);
          });
          stream.on('error', () => {
            read += size;
            readNext();
          });
          stream.on('close', () => {
            if (next) return;
            const whole = size <= MAX_SETTINGS_BYTES && read + size <= MAX_TOTAL_BYTES;
            read += size;
            const xml = whole ? Buffer.concat(chunks).toString('utf8') : '';
            if (kept + size <= MAX_PARSED_BYTES && namesConfigurationFactory(xml)) {
              kept += size;
              picked.push(xml);
            }
            readNext();
          });
        });
      });
      zip.readEntry();
    });
  } catch {
    // A damaged archive: what was read before the damage.
  } finally {
    zip.close();
  }
  return picked;
}
