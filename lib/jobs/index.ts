export { cancelJob, findJob, getJobView, listJobViews, queueJob, JOB_ID_PATTERN, type QueueJobInput } from "./service";
export {
  jobResultFormat,
  jobResultFrame,
  readJobPdf,
  readJobResult,
  readJobResultBody,
  RESULT_PART_BYTES,
  type JobPdf,
  type JobResultPart,
} from "./result";
export { jobLinks, pollAfterSeconds, toJobView, type JobView } from "./view";
export { jobSettings, workerName, type JobSettings } from "./settings";
export { processWorkQueue, requireWorkQueue, resetWorkQueue, type Runtime } from "./work-queue";
export type { WorkQueue } from "./queue/port";
export { JobRunner, type RunnerOptions } from "./runner";
export {
  acceptWorkCall,
  ensureJobRunner,
  kickJobWorkers,
  signWorkCall,
  stopJobRunner,
  verifyWorkCall,
  workJobsFor,
  type JobWorkServices,
  WORK_PATH,
  WORK_SIGNATURE_MAX_AGE_MS,
} from "./workers";
export { endJob } from "./lifecycle";
export { openInlineJob, type InlineJob } from "./inline";
export { fromEngineError } from "./engine-errors";
export {
  readJobPageImage,
  readJobPagesRead,
  readJobPageView,
  VIEW_IMAGE_BYTES,
  VIEW_IMAGE_WIDTH,
  type JobPageView,
  type ViewPageStatus,
  publicPage,
} from "./page-view";
