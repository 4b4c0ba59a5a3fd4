/** The MCP server: tools and resources over the Engram RPCs, on stdio or stateless Streamable HTTP. */
export { MIME_TYPES, mimeTypeOf } from '../documents.js';
export {
  REMEMBER_EXTRACTION_WAIT_SECONDS,
  REMEMBER_SESSION_EXTERNAL_ID,
  rememberStatement,
  type RememberOptions,
  type RememberOutcome,
} from '../remember.js';
export { MCP_MAX_BODY_BYTES, mcpHttpHandler, type McpHttpOptions } from './http.js';
export { memoryContent } from './render.js';
export { STORED_DATA_NOTICE, toolError, type ToolFailure } from './results.js';
export { FORGET_CONFIRMATION } from './schemas.js';
export { MAX_FILE_BYTES, PROFILE_URI, createMcpServer, type McpServerOptions } from './server.js';
export { runMcpStdio, type McpStdioOptions } from './stdio.js';
