export { configuredAllowList, type AllowList } from "./allow-hosts";
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
  checkRemoteUrl,
  fetchRemoteFile,
  type FetchRemoteOptions,
  fetchSettings,
  type FetchSettings,
  type GuardOptions,
  isAllowListed,
  postRemote,
  pinnedLookup,
  type ResolveHost,
} from "./fetch-remote";
export { OWN_SAMPLES, ownSampleName, readOwnSample } from "./own-samples";
