/**
 * A scan's report as the API, the dashboard and the command line give it:
 * coverage, and the CSV of every image (one row each).
 */
import { csvField } from '../../core/csv.js';
import type { ScanItem, ScanSummary } from './ports.js';

/** Opted out of all images (1 when there are none, so an empty repository is not "uncovered"). */
export const coverageOf = (summary: ScanSummary) => ({ optedOut: summary.optedOut, images: summary.images, ratio: summary.images === 0 ? 1 : summary.optedOut / summary.images });

/** The spec-like summary object (the API's `summary`, the command line's `--json`). */
export const summaryOf = (summary: ScanSummary) => ({ images: summary.images, optedOut: summary.optedOut, notOptedOut: summary.notOptedOut, failed: summary.failed, skipped: summary.skipped });

export const REPORT_COLUMNS = ['path', 'status', 'reason', 'code', 'bytes', 'sha256', 'format', 'value', 'signals', 'provenancePresent', 'provenanceValid', 'fingerprintPresent'] as const;

export function reportCsv(items: readonly ScanItem[]): string {
  const lines = [REPORT_COLUMNS.join(',')];
  for (const item of items) {
    lines.push(
      [
        csvField(item.path, true),
        csvField(item.status),
        csvField(item.reason ?? '', true),
        csvField(item.code ?? ''),
        String(item.bytes),
        csvField(item.sha256 ?? ''),
        csvField(item.format ?? ''),
        csvField(item.value ?? '', true),
        csvField(item.signals.join(' ')),
        item.provenance ? String(item.provenance.present) : '',
        item.provenance ? String(item.provenance.valid) : '',
        item.fingerprint ? String(item.fingerprint.present) : '',
      ].join(','),
    );
  }
  return `${lines.join('\r\n')}\r\n`;
}

/** The summary in words ("5 of 7 images carry the opt-out; ..."). */
export function summaryText(summary: ScanSummary): string {
  const parts = [`${summary.optedOut} of ${summary.images} image${summary.images === 1 ? '' : 's'} carry the opt-out`];
  if (summary.notOptedOut > 0) parts.push(`${summary.notOptedOut} do${summary.notOptedOut === 1 ? 'es' : ''} not`);
  if (summary.failed > 0) parts.push(`${summary.failed} could not be read`);
  if (summary.skipped > 0) parts.push(`${summary.skipped} skipped`);
  parts.push(`${summary.otherFiles} other file${summary.otherFiles === 1 ? '' : 's'}`);
  return parts.join('; ');
}
