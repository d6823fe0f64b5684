export { cancelJob, findJob, getJobView, listJobViews, submitJob, JOB_ID_PATTERN, type SubmitJobInput } from "./service";
export { jobResultFormat, jobResultFrame, readJobPdf, readJobResult, RESULT_PART_BYTES, type JobPdf, type JobResultPart } from "./result";
export { jobLinks, pollAfterSeconds, toJobView, type JobView } from "./view";
export { getWorkQueue, jobSettings, requireWorkQueue, resetWorkQueue, workerName, type JobSettings } from "./settings";
export { JobRunner, type RunnerOptions } from "./runner";
export { ensureJobRunner, kickJobWorkers, signWorkCall, stopJobRunner, verifyWorkCall, workJobsFor, WORK_PATH } from "./workers";
export { endJob } from "./lifecycle";
