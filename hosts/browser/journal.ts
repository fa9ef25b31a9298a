// The browser host's input: one run export, read with the checks every host applies
// (export-format.ts). A replay page never appends to a run, so it keeps no store of its own.
export { exportFormat, ExportError, openExportArtifacts, parseExport, parseExportText, sealedKeyIds, type RunExport } from '../core/export-format.js';
