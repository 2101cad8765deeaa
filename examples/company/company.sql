-- A tiny company register for the dependent-chain example.
CREATE TABLE company (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    country TEXT NOT NULL
);
CREATE TABLE shareholder (
    company_id INTEGER NOT NULL REFERENCES company(id),
    holder TEXT NOT NULL,
    percent REAL NOT NULL CHECK (percent > 0 AND percent <= 100)
);
INSERT INTO company (id, name, country) VALUES
    (17, 'Northwind Robotics', 'NL'),
    (42, 'Acme Data Systems', 'DE'),
    (63, 'Blue Harbor Logistics', 'SG');
INSERT INTO shareholder (company_id, holder, percent) VALUES
    (42, 'Founders Trust', 38.5),
    (42, 'Rhine Ventures', 24.0),
    (42, 'Employee Pool', 12.5),
    (42, 'Public float', 25.0),
    (17, 'Delta Capital', 60.0),
    (17, 'Public float', 40.0),
    (63, 'Harbor Holdings', 100.0);
