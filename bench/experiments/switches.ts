import type { DataSource } from '@slipway/db';

/**
 * Experiment switches on a bench database (never a real one): the commit-time locks of a create
 * turned off without touching the code. `pg_notify` is shadowed by a function in `public` (the
 * database's search_path puts `public` before `pg_catalog`, for sessions opened afterwards) that
 * notifies only while `bench_switch.notify` is on; the events' numbering trigger is replaced with
 * one that takes its per-workspace lock or not. Switching them off breaks the events' ordering
 * guarantee: measurement only.
 */
export async function installSwitches(ds: DataSource, dbName: string) {
  await ds.query(`CREATE TABLE bench_switch (notify boolean NOT NULL)`);
  await ds.query(`INSERT INTO bench_switch VALUES (true)`);
  await ds.query(`CREATE FUNCTION public.pg_notify(text, text) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN IF (SELECT notify FROM public.bench_switch) THEN PERFORM pg_catalog.pg_notify($1, $2); END IF; END $$`);
  await ds.query(`ALTER DATABASE ${dbName} SET search_path = "$user", public, pg_catalog`);
  return {
    notify: (on: boolean) => ds.query(`UPDATE bench_switch SET notify = $1`, [on]),
    numberingLock: (lock: boolean) =>
      ds.query(`CREATE OR REPLACE FUNCTION slipway_event_number() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          ${lock ? `PERFORM pg_advisory_xact_lock(hashtext('slipway_events'), hashtext(NEW.workspace_id::text));` : ''}
          UPDATE events SET id = nextval('events_id_seq') WHERE uid = NEW.uid;
          PERFORM pg_notify('slipway_events', NEW.workspace_id::text);
          RETURN NULL;
        END $$`),
  };
}
