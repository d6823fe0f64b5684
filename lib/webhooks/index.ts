export {
  announceJobEnd,
  announcesEnd,
  enableWebhookReceiver,
  jobWebhookView,
  listWebhookAttempts,
  listWebhookReceivers,
  resolveJobWebhook,
  sendTestEvent,
  type WebhookReceiverView,
} from "./service";
export { accountWaitMs, enterDelivery, receiverOf } from "./gate";
export {
  MAX_REPLACED_SECRETS,
  getWebhookAccount,
  newSigningSecret,
  rotateWebhookSecret,
  setDefaultWebhookUrl,
  signingSecrets,
  type WebhookAccountView,
} from "./secrets";
export { attemptDelivery, type Delivery } from "./deliver";
export { jobEndEvent, jobEventId } from "./events";
export { processDeliveryQueue, resetDeliveryQueue, type DeliveryQueue } from "./queue";
export { retryDelay, webhookSettings, type WebhookSettings, type WebhookSettingsOverrides } from "./settings";
export { checkWebhookUrl } from "./url";
