-- The database the scoring cases run on (tests/data/scoring_cases.jsonl).
CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, city TEXT, score REAL, n INTEGER);
INSERT INTO person VALUES
  (1, 'Ada', 'London', 90.0, 1),
  (2, 'Bob', 'Paris', 80.5, 2),
  (3, 'Cy', 'London', NULL, 2),
  (4, 'Dee', NULL, 80.5, 3),
  (5, 'Ed', 'Paris', 70.0, NULL);
CREATE TABLE pet (id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES person(id), kind TEXT);
INSERT INTO pet VALUES (1, 1, 'cat'), (2, 1, 'dog'), (3, 2, 'cat'), (4, 4, 'fish');
