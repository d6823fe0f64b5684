import { cancelJobAction } from "@/app/actions/jobs";
import type { JobView } from "@/lib/jobs";
import { ConfirmAction, DataTable, type Column } from "./data-table";
import { formatDateTime } from "./format";
import { JobsRefresh } from "./jobs-refresh";

const COLUMNS: Column[] = [
  { label: "Job" },
  { label: "Status" },
  { label: "Pages" },
  { label: "Credits" },
  { label: "Created (UTC)" },
  { label: "Result and actions", hidden: true },
];

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;
const isActive = (job: JobView) => job.status === "queued" || job.status === "running";

/**
 * The account's recent jobs (its synchronous reads included, issue 41): status, pages read (and failed) of the job's
 * pages, credits used, reserved and refunded, when it was created; a cancel button while it is queued or running, and its result as a download
 * (`/settings/jobs/{id}/result`, under the session: the API's result route needs a key header a link cannot send) in
 * its own format, Markdown, JSON, a searchable PDF (the job's file with the invisible words) or hOCR.
 */
export function JobsSection({ jobs, more }: { jobs: JobView[]; more: boolean }) {
  const active = jobs.some(isActive);
  return (
    <section aria-labelledby="jobs-heading" className="card stack">
      <h2 id="jobs-heading">Jobs</h2>
      <p className="muted">
        Every document you send is a job: those sent as jobs (<code>POST /api/ocr/jobs</code>, or{" "}
        <code>ocr extract</code> on a big file) and those read in their request (<code>POST /api/ocr/process</code>, MCP{" "}
        <code>extract_text</code>), which end with their answer. A job reserves a credit per page when it is accepted,
        spends one per page read, and gives back the rest when it ends (pages that failed, were cancelled or not read; a
        read that failed or whose answer was not delivered costs nothing). Results are kept 24 hours after a job ends.
      </p>
      {active && <JobsRefresh />}
      {jobs.length === 0 ? (
        <p className="muted" data-testid="jobs-empty">
          No jobs yet.
        </p>
      ) : (
        <DataTable
          className="jobs-table"
          caption={`Your jobs, newest first${active ? "; updated every few seconds while one runs" : ""}`}
          columns={COLUMNS}
          labelledBy="jobs-heading"
        >
          {jobs.map((job) => (
            <JobRow key={job.jobId} job={job} />
          ))}
        </DataTable>
      )}
      {more && (
        <p className="hint">
          Older jobs: <code>ocr jobs list</code>, or <code>GET /api/ocr/jobs</code> with a key.
        </p>
      )}
    </section>
  );
}

function JobRow({ job }: { job: JobView }) {
  const read = job.pagesDone + job.pagesFailed;
  return (
    <tr data-job-id={job.jobId} data-status={job.status}>
      <td>
        <code className="request-id">{job.jobId}</code>
        <div className="hint">
          {job.format} · {job.inputSource === "url" ? "URL" : "upload"}
        </div>
      </td>
      <td data-label="Status">
        <span className={`job-status job-${job.status}`} data-testid="job-status">
          {job.status}
        </span>
        {job.error && job.status === "failed" && <div className="hint">{job.error.code}</div>}
      </td>
      <td data-testid="job-pages" data-label="Pages">
        <progress max={job.pagesTotal} value={read} aria-label={`${read} of ${job.pagesTotal} pages read`} />
        <div className="job-pages">
          {job.pagesDone}/{job.pagesTotal} read
          {job.pagesFailed > 0 && <span className="negative">{job.pagesFailed} failed</span>}
        </div>
        {job.pageCount !== job.pagesTotal && <div className="hint">of {plural(job.pageCount, "page")}</div>}
      </td>
      <td data-testid="job-credits" data-label="Credits" className="job-credits">
        <span data-credits="used">{job.creditsUsed} used</span>
        <span data-credits="reserved">{job.creditsReserved} reserved</span>
        {(job.creditsRefunded > 0 || job.finishedAt !== null) && (
          <span data-credits="refunded">{job.creditsRefunded} refunded</span>
        )}
      </td>
      <td data-label="Created (UTC)">
        <time dateTime={job.createdAt}>{formatDateTime(job.createdAt)}</time>
      </td>
      <td className="job-actions">
        {job.pagesDone > 0 && (
          <>
            <span className="job-result">
              <a href={`/settings/jobs/${job.jobId}/result`} download>
                {isActive(job) ? "Result so far" : "Result"}
              </a>{" "}
              <span className="muted">
                (
                <a
                  href={`/settings/jobs/${job.jobId}/result?format=markdown`}
                  download
                  aria-label={`Result of ${job.jobId} as Markdown`}
                >
                  md
                </a>
                ,{" "}
                <a
                  href={`/settings/jobs/${job.jobId}/result?format=json`}
                  download
                  aria-label={`Result of ${job.jobId} as JSON`}
                >
                  json
                </a>
                ,{" "}
                <a
                  href={`/settings/jobs/${job.jobId}/result?format=pdf`}
                  download
                  aria-label={`Result of ${job.jobId} as a searchable PDF`}
                >
                  pdf
                </a>
                ,{" "}
                <a
                  href={`/settings/jobs/${job.jobId}/result?format=hocr`}
                  download
                  aria-label={`Result of ${job.jobId} as hOCR`}
                >
                  hocr
                </a>
                )
              </span>
            </span>
            {job.finishedAt !== null && (
              // After this the download answers 410: the results are gone.
              <span className="hint job-expiry">
                kept until <time dateTime={job.expiresAt}>{formatDateTime(job.expiresAt)}</time>
              </span>
            )}
          </>
        )}
        {isActive(job) && (
          <ConfirmAction summary="Cancel" button="Cancel job" action={cancelJobAction} name="jobId" value={job.jobId}>
            Cancel <code>{job.jobId}</code>? Pages not read yet are refunded; the {plural(job.pagesDone, "page")} read
            so far stay charged and readable.
          </ConfirmAction>
        )}
      </td>
    </tr>
  );
}
