export {
  emptyRecords,
  EXPORT_FORMAT,
  EXPORT_VERSION,
  type ExportedChunk,
  type ExportedDocument,
  type ExportedExtractionJob,
  type ExportedMemCell,
  type ExportedMemory,
  type ExportedMemoryRevision,
  type ExportedMessage,
  type ExportedSession,
  type ExportedSessionState,
  type ExportHeader,
  type ExportRecords,
  type ExportTrailer,
  type Json,
  RECORD_KINDS,
  RECORD_SCHEMAS,
  type RecordKind,
  type RecordOf,
} from './format.js';
export { deriveId, dropUndefined, remapIds } from './ids.js';
export { ExportWriter, type HeaderInput, parseExport, type ParsedExport, recordKey } from './lines.js';
export { convertMem0, mem0Users, type Mem0Options } from './mem0.js';
