-- Issue 13.7: a virtual table whose module this SQLite does not have, beside healthy
-- tables. No SQLite can create one, so it is written into the schema directly.
CREATE TABLE track (id INTEGER PRIMARY KEY, title TEXT NOT NULL, seconds INTEGER);
INSERT INTO track (title, seconds) VALUES ('So What', 562), ('Blue in Green', 337);
PRAGMA writable_schema = ON;
INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql)
VALUES ('table', 'lyrics', 'lyrics', 0, 'CREATE VIRTUAL TABLE lyrics USING nosuchmodule(body)');
PRAGMA writable_schema = OFF;
