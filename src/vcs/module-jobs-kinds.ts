/** The job kinds of VCS-backed modules (handlers in module-jobs.ts). */
export const JOB = {
  /** Registers the webhook, then scans tags (tag mode) or publishes the initial version (branch mode). */
  setup: 'vcs.module.setup',
  /** Lists the repository's tags and queues a clone for each new matching one. */
  scan: 'vcs.module.scan',
  /** Fetches one commit and hands its tree to the registry's ingestion. */
  clone: 'vcs.module.clone',
  /** Records in the event log how a version's ingestion ended. */
  settle: 'vcs.module.settle',
  /** Removes a webhook at the provider (after a module was deleted or reconnected). */
  deleteWebhook: 'vcs.webhook.delete',
  /** Recurring: scans every tag-based module's tags and forgets old delivery ids. */
  rescan: 'vcs.module.rescan',
} as const;
