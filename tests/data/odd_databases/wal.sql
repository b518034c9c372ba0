-- Issue 13.8: a database in WAL mode.
PRAGMA journal_mode = WAL;
CREATE TABLE genre (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
INSERT INTO genre (name) VALUES ('Jazz'), ('Blues'), ('Soul');
