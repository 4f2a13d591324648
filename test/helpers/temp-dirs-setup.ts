import { afterAll } from 'vitest';
import { removeTempDirs } from './server.js';

// Registered before any test file's own hooks, so it runs after all of them (hooks run as a
// stack): a file's servers and child processes are closed before their data dirs go.
afterAll(removeTempDirs);
