-- Issue 13.6: user tables whose names start with "sqlite" but not "sqlite_".
CREATE TABLE sqliteusers (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE sqlite3data (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES sqliteusers (id), payload TEXT);
CREATE TABLE "sqlite-notes" (note TEXT);
CREATE TABLE plain (x INTEGER);
INSERT INTO sqliteusers (name) VALUES ('ada'), ('grace');
INSERT INTO sqlite3data (user_id, payload) VALUES (1, 'a'), (2, 'b'), (2, 'c');
INSERT INTO "sqlite-notes" VALUES ('n');
CREATE INDEX sqlite3data_user ON sqlite3data (user_id);
ANALYZE;  -- creates SQLite's own sqlite_stat1, which must stay hidden
