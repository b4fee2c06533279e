// The cloud scheduler's pages (`ejob cloud` serves this list as
// pages/index.js): apps, cloud jobs, tasks and statistics, read through
// the cloud REST API (/api/app/*, /api/job/*).
export const pageModules = [
  './cloud/apps.js',
  './cloud/jobs.js',
  './cloud/tasks.js',
  './cloud/statistics.js',
];
