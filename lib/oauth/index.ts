export { ALL_SCOPES, SCOPES, oauthUrls, serviceOrigin, signInReturnPath, type Scope } from "./config";
export {
  answerAuthorization,
  checkAuthorizationRequest,
  denyAuthorization,
  describeRedirect,
  describeScopes,
  redirectsAutomatically,
  type AuthorizationCheck,
  type AuthorizationRequest,
} from "./authorize";
export {
  authenticateAccessToken,
  bearerChallenge,
  isAccessToken,
  isGrantActive,
  type AccessTokenIdentity,
} from "./bearer";
export { findClient, isMetadataDocumentId, redirectUriProblem, registerClient } from "./clients";
export {
  authorizationServerMetadata,
  handleRegistration,
  handleRevocation,
  handleTokenRequest,
  metadataResponse,
  protectedResourceMetadata,
} from "./endpoints";
export { listConnectedApps, revokeConnectedApp, type ConnectedApp } from "./grants";
export { OAuthProblem, isOAuthProblem } from "./problem";
