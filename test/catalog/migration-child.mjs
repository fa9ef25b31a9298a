// Opens a store with the real migration code, but stops dead inside the v2 migration (after its
// tables exist and a row is written, before the transaction commits) and waits to be killed.
import { writeFileSync } from 'node:fs';
import { openDatabase } from '../../dist/hosts/node/stores/sqlite/journal.js';
import { migrations } from '../../dist/hosts/node/stores/sqlite/migrations.js';

const [file, marker] = process.argv.slice(2);
const v2 = migrations.find((m) => m.version === 2);
const up = v2.up;
v2.up = (db) => {
  up(db);
  db.prepare("INSERT INTO workflow_drafts (workflow_id, draft_revision, template, search_text, updated_at, updated_by) VALUES ('half', 1, '{}', '', 0, 'x')").run();
  writeFileSync(marker, 'inside the v2 migration\n');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); // blocks until SIGKILL
};
openDatabase(file);
writeFileSync(marker, 'finished: the kill came too late\n');
