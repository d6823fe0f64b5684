export { decodeBase64Input, formatMegabytes } from "./base64";
export {
  formatIPv6,
  type IpAddress,
  isLocalhostName,
  isPublicAddress,
  parseHostLiteral,
  parseIPv4,
  parseIPv6,
} from "./address";
export {
  fetchRemoteFile,
  type FetchRemoteOptions,
  pinnedLookup,
  type ResolveHost,
} from "./fetch-remote";
