-- Issue 13.7: a view over a table that is gone, beside healthy tables.
CREATE TABLE artist (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE album (id INTEGER PRIMARY KEY, title TEXT, artist_id INTEGER REFERENCES artist (id));
INSERT INTO artist (name) VALUES ('Miles'), ('Nina');
INSERT INTO album (title, artist_id) VALUES ('Kind of Blue', 1), ('Pastel Blues', 2);
CREATE TABLE dropped (x INTEGER);
CREATE VIEW broken AS SELECT x FROM dropped;
CREATE VIEW titles AS SELECT title FROM album;
DROP TABLE dropped;
