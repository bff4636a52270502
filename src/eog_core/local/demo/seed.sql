-- Demo CSM database for the eog_core local gym (written for eog_core; fictional data).
-- Four accounts, their contacts, products, support entitlements, cases and case comments.

CREATE TABLE account (
    sys_id TEXT PRIMARY KEY,
    number TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    industry TEXT,
    tier TEXT NOT NULL CHECK (tier IN ('bronze', 'silver', 'gold')),
    active INTEGER NOT NULL DEFAULT 1,
    sys_updated_on TEXT NOT NULL
);

CREATE TABLE contact (
    sys_id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES account (sys_id),
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    phone TEXT,
    title TEXT,
    sys_updated_on TEXT NOT NULL
);

CREATE TABLE product (
    sys_id TEXT PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    category TEXT NOT NULL,
    sys_updated_on TEXT NOT NULL
);

CREATE TABLE entitlement (
    sys_id TEXT PRIMARY KEY,
    number TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES account (sys_id),
    product_id TEXT NOT NULL REFERENCES product (sys_id),
    support_level TEXT NOT NULL CHECK (support_level IN ('standard', 'premium')),
    status TEXT NOT NULL CHECK (status IN ('active', 'expired', 'suspended')),
    start_date TEXT NOT NULL,
    end_date TEXT NOT NULL,
    sys_updated_on TEXT NOT NULL
);

CREATE TABLE "case" (
    sys_id TEXT PRIMARY KEY,
    number TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES account (sys_id),
    contact_id TEXT REFERENCES contact (sys_id),
    product_id TEXT REFERENCES product (sys_id),
    entitlement_id TEXT REFERENCES entitlement (sys_id),
    short_description TEXT NOT NULL,
    description TEXT,
    priority INTEGER NOT NULL CHECK (priority BETWEEN 1 AND 4),
    state TEXT NOT NULL CHECK (state IN ('new', 'in_progress', 'on_hold', 'resolved', 'closed')),
    assigned_to TEXT,
    opened_by TEXT NOT NULL,
    close_notes TEXT,
    sys_created_on TEXT NOT NULL,
    sys_updated_on TEXT NOT NULL
);

CREATE TABLE case_comment (
    sys_id TEXT PRIMARY KEY,
    case_id TEXT NOT NULL REFERENCES "case" (sys_id),
    author TEXT NOT NULL,
    body TEXT NOT NULL,
    sys_created_on TEXT NOT NULL
);

INSERT INTO account VALUES
    ('acc_001', 'ACC0001001', 'Harbor Lane Robotics', 'manufacturing', 'gold', 1, '2025-03-02 09:15:00'),
    ('acc_002', 'ACC0001002', 'Quillfeather Analytics', 'software', 'silver', 1, '2025-01-20 14:40:00'),
    ('acc_003', 'ACC0001003', 'Bramblewood Provisions', 'retail', 'bronze', 1, '2024-11-05 11:05:00'),
    ('acc_004', 'ACC0001004', 'Tidewater Clinics', 'healthcare', 'gold', 1, '2025-04-18 08:30:00');

INSERT INTO contact VALUES
    ('con_001', 'acc_001', 'Marta', 'Lindqvist', 'marta.lindqvist@harborlane.example', '+1 555 0101', 'Operations Director', '2025-03-02 09:20:00'),
    ('con_002', 'acc_001', 'Kenji', 'Ito', 'kenji.ito@harborlane.example', '+1 555 0102', 'Fleet Engineer', '2025-03-02 09:25:00'),
    ('con_003', 'acc_002', 'Ruth', 'Abernathy', 'ruth.abernathy@quillfeather.example', '+1 555 0201', 'Head of Data', '2025-01-20 14:45:00'),
    ('con_004', 'acc_003', 'Tomasz', 'Wrobel', 'tomasz.wrobel@bramblewood.example', '+1 555 0301', 'Store Systems Lead', '2024-11-05 11:10:00'),
    ('con_005', 'acc_004', 'Amara', 'Nwosu', 'amara.nwosu@tidewater.example', '+1 555 0401', 'IT Manager', '2025-04-18 08:35:00'),
    ('con_006', 'acc_004', 'Felipe', 'Arroyo', 'felipe.arroyo@tidewater.example', '+1 555 0402', 'Logistics Coordinator', '2025-04-18 08:40:00');

INSERT INTO product VALUES
    ('prod_001', 'FTH-100', 'Fleet Telemetry Hub', 'iot', '2024-06-01 00:00:00'),
    ('prod_002', 'RPL-200', 'Route Planner', 'software', '2024-06-01 00:00:00'),
    ('prod_003', 'EGW-300', 'Edge Gateway', 'hardware', '2024-06-01 00:00:00'),
    ('prod_004', 'IDB-400', 'Insight Dashboards', 'software', '2024-06-01 00:00:00');

INSERT INTO entitlement VALUES
    ('ent_001', 'ENT0002001', 'acc_001', 'prod_004', 'premium', 'active', '2025-01-01', '2026-12-31', '2025-01-01 10:00:00'),
    ('ent_002', 'ENT0002002', 'acc_001', 'prod_001', 'premium', 'expired', '2024-07-01', '2025-06-30', '2025-07-01 00:05:00'),
    ('ent_003', 'ENT0002003', 'acc_001', 'prod_003', 'standard', 'active', '2025-02-01', '2026-01-31', '2025-02-01 10:00:00'),
    ('ent_004', 'ENT0002004', 'acc_002', 'prod_002', 'standard', 'active', '2024-10-01', '2026-09-30', '2024-10-01 10:00:00'),
    ('ent_005', 'ENT0002005', 'acc_003', 'prod_002', 'standard', 'suspended', '2024-05-01', '2025-04-30', '2025-02-14 16:20:00'),
    ('ent_006', 'ENT0002006', 'acc_004', 'prod_001', 'premium', 'active', '2025-04-01', '2027-03-31', '2025-04-01 10:00:00');

INSERT INTO "case" VALUES
    ('case_001', 'CS0001001', 'acc_001', 'con_001', 'prod_004', 'ent_001', 'Dashboard export times out', 'CSV export of the weekly fleet report stops after 60 seconds.', 3, 'resolved', 'lee.moreau@ourdesk.example', 'marta.lindqvist@harborlane.example', 'Raised the export timeout for the account.', '2025-05-06 10:12:00', '2025-05-09 15:30:00'),
    ('case_002', 'CS0001002', 'acc_002', 'con_003', 'prod_002', 'ent_004', 'Route optimisation ignores depot hours', 'Routes are planned for depots outside their opening hours.', 2, 'in_progress', 'lee.moreau@ourdesk.example', 'ruth.abernathy@quillfeather.example', NULL, '2025-06-11 08:45:00', '2025-06-12 13:00:00'),
    ('case_003', 'CS0001003', 'acc_001', 'con_002', 'prod_004', 'ent_001', 'Dashboard login loops back to the sign-in page', 'After signing in, users are sent back to the sign-in page.', 2, 'in_progress', 'dana.okafor@ourdesk.example', 'kenji.ito@harborlane.example', NULL, '2025-06-20 09:00:00', '2025-06-23 11:45:00'),
    ('case_004', 'CS0001004', 'acc_004', 'con_005', 'prod_001', 'ent_006', 'Telemetry gaps on two vans', 'Two vans stop reporting positions for hours at a time.', 1, 'new', NULL, 'amara.nwosu@tidewater.example', NULL, '2025-06-25 07:50:00', '2025-06-25 07:50:00'),
    ('case_005', 'CS0001005', 'acc_003', 'con_004', 'prod_002', 'ent_005', 'Question about licence renewal', 'Asks how to renew the suspended route planner licence.', 4, 'on_hold', 'lee.moreau@ourdesk.example', 'tomasz.wrobel@bramblewood.example', NULL, '2025-02-15 12:00:00', '2025-02-16 09:10:00'),
    ('case_006', 'CS0001006', 'acc_004', 'con_006', 'prod_001', 'ent_006', 'Firmware rollout stuck at 40 percent', 'The over-the-air update stalls on older hubs.', 3, 'closed', 'dana.okafor@ourdesk.example', 'felipe.arroyo@tidewater.example', 'Rolled out in two smaller batches.', '2025-04-28 14:00:00', '2025-05-02 17:25:00');

INSERT INTO case_comment VALUES
    ('cmt_001', 'case_003', 'kenji.ito@harborlane.example', 'Clearing browser cookies did not help.', '2025-06-20 09:30:00'),
    ('cmt_002', 'case_003', 'lee.moreau@ourdesk.example', 'Reproduced with a test user; the session cookie is rejected.', '2025-06-23 11:45:00'),
    ('cmt_003', 'case_002', 'lee.moreau@ourdesk.example', 'Waiting on the depot calendar export from the customer.', '2025-06-12 13:00:00');
