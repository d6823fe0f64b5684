import packageJson from "@/package.json";

/**
 * The service's one version number, package.json's: `/api/health`, MCP `serverInfo` and the OpenAPI document all
 * report it. 2.0.0 is the metadata version the seed's sample client configuration declares.
 */
export const SERVICE_VERSION: string = packageJson.version;
