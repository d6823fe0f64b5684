import packageJson from "@/package.json";

/**
 * The service's one version number, package.json's: `/api/health`, MCP `serverInfo` and the OpenAPI document all
 * report it. 2.0.0 is the version the sample MCP client configuration declares (docs/mcp.md).
 */
export const SERVICE_VERSION: string = packageJson.version;
