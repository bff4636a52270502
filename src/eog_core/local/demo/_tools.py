"""The demo CSM tools: accounts, contacts, products, entitlements, cases, comments.

Real SQL against the demo schema (``seed.sql``). Business rules a careless agent
can trip over: a case may only use an *active* entitlement of its own account,
and resolving or closing a case needs close notes.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from typing import Any

from eog_core.errors import ToolError

from .._databases import rows_as_dicts
from .._tools import ToolContext, ToolRegistry

__all__ = ["build_demo_tools"]

_CASE_STATES = ["new", "in_progress", "on_hold", "resolved", "closed"]
_ENTITLEMENT_STATUSES = ["active", "expired", "suspended"]
_SUPPORT_LEVELS = ["standard", "premium"]


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required or [],
        "additionalProperties": False,
    }


def _select(ctx: ToolContext, sql: str, *params: Any) -> list[dict[str, Any]]:
    return rows_as_dicts(ctx.connection.execute(sql, params))


def _one(ctx: ToolContext, sql: str, *params: Any) -> dict[str, Any] | None:
    rows = _select(ctx, sql, *params)
    return rows[0] if rows else None


def _case(ctx: ToolContext, case_id: str) -> dict[str, Any]:
    row = _one(ctx, 'SELECT * FROM "case" WHERE sys_id = ? OR number = ?', case_id, case_id)
    if row is None:
        raise ToolError(f"case not found: {case_id}")
    return row


def _check_date(value: str, field: str) -> str:
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise ToolError(f"{field} must be a date as YYYY-MM-DD, not {value!r}") from None


def _update(
    connection: sqlite3.Connection, table: str, sys_id: str, changes: dict[str, Any]
) -> None:
    # Column names come from the tool's closed input schema, never from free text.
    assignments = [f"{column} = ?" for column in changes]
    assignments.append("sys_updated_on = datetime('now')")
    connection.execute(
        f'UPDATE "{table}" SET {", ".join(assignments)} WHERE sys_id = ?',
        [*changes.values(), sys_id],
    )


def _next_id(ctx: ToolContext, table: str, prefix: str) -> int:
    row = _one(ctx, f'SELECT COUNT(*) AS n FROM "{table}"')
    count = int(row["n"]) if row else 0
    while _one(ctx, f'SELECT 1 FROM "{table}" WHERE sys_id = ?', f"{prefix}{count + 1:03d}"):
        count += 1
    return count + 1


def build_demo_tools() -> ToolRegistry:
    """A fresh registry holding the demo CSM tools."""
    registry = ToolRegistry()
    tool = registry.tool

    @tool(
        description="Find customer accounts by (part of) their name or by account number.",
        input_schema=_object(
            {"name": _string("Part of the account name"), "number": _string("Account number")}
        ),
    )
    def find_account(ctx: ToolContext, name: str = "", number: str = "") -> dict[str, Any]:
        if not name and not number:
            raise ToolError("give a name or an account number")
        accounts = _select(
            ctx,
            "SELECT * FROM account WHERE (? = '' OR name LIKE '%' || ? || '%')"
            " AND (? = '' OR number = ?) ORDER BY number",
            name,
            name,
            number,
            number,
        )
        return {"accounts": accounts}

    @tool(
        description="Find contacts of an account, by name or by email.",
        input_schema=_object(
            {
                "account_id": _string("sys_id of the account"),
                "name": _string("Part of the first or last name"),
                "email": _string("Exact email address"),
            }
        ),
    )
    def find_contact(
        ctx: ToolContext, account_id: str = "", name: str = "", email: str = ""
    ) -> dict[str, Any]:
        if not (account_id or name or email):
            raise ToolError("give at least one of account_id, name, email")
        contacts = _select(
            ctx,
            "SELECT * FROM contact WHERE (? = '' OR account_id = ?)"
            " AND (? = '' OR first_name || ' ' || last_name LIKE '%' || ? || '%')"
            " AND (? = '' OR email = ?) ORDER BY sys_id",
            account_id,
            account_id,
            name,
            name,
            email,
            email,
        )
        return {"contacts": contacts}

    @tool(
        description="Find products by code or by (part of) their name.",
        input_schema=_object({"query": _string("Product code or part of its name")}, ["query"]),
    )
    def find_product(ctx: ToolContext, query: str) -> dict[str, Any]:
        products = _select(
            ctx,
            "SELECT * FROM product WHERE code = ? OR name LIKE '%' || ? || '%' ORDER BY code",
            query,
            query,
        )
        return {"products": products}

    @tool(
        description="List the support entitlements of an account, optionally for one product or status.",
        input_schema=_object(
            {
                "account_id": _string("sys_id of the account"),
                "product_id": _string("sys_id of the product"),
                "status": _string("Entitlement status", enum=_ENTITLEMENT_STATUSES),
            },
            ["account_id"],
        ),
    )
    def find_entitlements(
        ctx: ToolContext, account_id: str, product_id: str = "", status: str = ""
    ) -> dict[str, Any]:
        entitlements = _select(
            ctx,
            "SELECT * FROM entitlement WHERE account_id = ? AND (? = '' OR product_id = ?)"
            " AND (? = '' OR status = ?) ORDER BY number",
            account_id,
            product_id,
            product_id,
            status,
            status,
        )
        return {"entitlements": entitlements}

    @tool(
        description="Change an entitlement's status, end date or support level.",
        input_schema=_object(
            {
                "entitlement_id": _string("sys_id of the entitlement"),
                "status": _string("New status", enum=_ENTITLEMENT_STATUSES),
                "end_date": _string("New end date, YYYY-MM-DD"),
                "support_level": _string("New support level", enum=_SUPPORT_LEVELS),
            },
            ["entitlement_id"],
        ),
    )
    def update_entitlement(ctx: ToolContext, entitlement_id: str, **changes: Any) -> dict[str, Any]:
        entitlement = _one(ctx, "SELECT * FROM entitlement WHERE sys_id = ?", entitlement_id)
        if entitlement is None:
            raise ToolError(f"entitlement not found: {entitlement_id}")
        if not changes:
            raise ToolError("nothing to update")
        if "end_date" in changes:
            changes["end_date"] = _check_date(changes["end_date"], "end_date")
            if changes["end_date"] < entitlement["start_date"]:
                raise ToolError("end_date cannot be before the start date")
        _update(ctx.connection, "entitlement", entitlement_id, changes)
        return _one(ctx, "SELECT * FROM entitlement WHERE sys_id = ?", entitlement_id) or {}

    @tool(
        description="Open a new case for an account. The entitlement, if given, must be active.",
        input_schema=_object(
            {
                "account_id": _string("sys_id of the account"),
                "short_description": _string("One-line summary"),
                "description": _string("Details"),
                "contact_id": _string("sys_id of the reporting contact"),
                "product_id": _string("sys_id of the product concerned"),
                "entitlement_id": _string("sys_id of the entitlement covering the case"),
                "priority": {
                    "type": "integer",
                    "enum": [1, 2, 3, 4],
                    "description": "1 = critical",
                },
                "assigned_to": _string("Email of the assigned agent"),
            },
            ["account_id", "short_description"],
        ),
    )
    def create_case(
        ctx: ToolContext,
        account_id: str,
        short_description: str,
        priority: int = 3,
        **links: Any,
    ) -> dict[str, Any]:
        if _one(ctx, "SELECT 1 FROM account WHERE sys_id = ?", account_id) is None:
            raise ToolError(f"account not found: {account_id}")
        contact_id = links.get("contact_id")
        if contact_id and not _one(
            ctx, "SELECT 1 FROM contact WHERE sys_id = ? AND account_id = ?", contact_id, account_id
        ):
            raise ToolError(f"contact {contact_id} does not belong to account {account_id}")
        entitlement_id = links.get("entitlement_id")
        if entitlement_id:
            entitlement = _one(
                ctx,
                "SELECT * FROM entitlement WHERE sys_id = ? AND account_id = ?",
                entitlement_id,
                account_id,
            )
            if entitlement is None:
                raise ToolError(f"entitlement {entitlement_id} does not belong to {account_id}")
            if entitlement["status"] != "active":
                raise ToolError(f"entitlement {entitlement_id} is {entitlement['status']}")
            if links.get("product_id", entitlement["product_id"]) != entitlement["product_id"]:
                raise ToolError("the entitlement covers another product")
        serial = _next_id(ctx, "case", "case_")
        sys_id = f"case_{serial:03d}"
        ctx.connection.execute(
            'INSERT INTO "case" (sys_id, number, account_id, contact_id, product_id,'
            " entitlement_id, short_description, description, priority, state, assigned_to,"
            " opened_by, sys_created_on, sys_updated_on) VALUES"
            " (?, ?, ?, ?, ?, ?, ?, ?, ?, 'new', ?, ?, datetime('now'), datetime('now'))",
            (
                sys_id,
                f"CS{1_000 + serial:07d}",
                account_id,
                contact_id,
                links.get("product_id"),
                entitlement_id,
                short_description,
                links.get("description"),
                int(priority),
                links.get("assigned_to"),
                ctx.user_email or "unknown",
            ),
        )
        return _case(ctx, sys_id)

    @tool(
        description="Update a case (by sys_id or number). Resolving or closing needs close notes.",
        input_schema=_object(
            {
                "case_id": _string("sys_id or number of the case"),
                "state": _string("New state", enum=_CASE_STATES),
                "priority": {"type": "integer", "enum": [1, 2, 3, 4]},
                "assigned_to": _string("Email of the assigned agent"),
                "close_notes": _string("How the case was resolved"),
                "short_description": _string("One-line summary"),
            },
            ["case_id"],
        ),
    )
    def update_case(ctx: ToolContext, case_id: str, **changes: Any) -> dict[str, Any]:
        case = _case(ctx, case_id)
        if not changes:
            raise ToolError("nothing to update")
        if changes.get("state") in ("resolved", "closed") and not (
            changes.get("close_notes") or case["close_notes"]
        ):
            raise ToolError("close_notes are required to resolve or close a case")
        _update(ctx.connection, "case", case["sys_id"], changes)
        return _case(ctx, case["sys_id"])

    @tool(
        description="List cases, optionally of one account and in one state.",
        input_schema=_object(
            {
                "account_id": _string("sys_id of the account"),
                "state": _string("Case state", enum=_CASE_STATES),
                "limit": {"type": "integer", "description": "At most this many (default 20)"},
            }
        ),
    )
    def list_cases(
        ctx: ToolContext, account_id: str = "", state: str = "", limit: int = 20
    ) -> dict[str, Any]:
        cases = _select(
            ctx,
            "SELECT sys_id, number, account_id, short_description, priority, state, assigned_to"
            " FROM \"case\" WHERE (? = '' OR account_id = ?) AND (? = '' OR state = ?)"
            " ORDER BY number LIMIT ?",
            account_id,
            account_id,
            state,
            state,
            max(1, min(int(limit), 100)),
        )
        return {"cases": cases}

    @tool(
        description="Read one case (by sys_id or number) with its comments.",
        input_schema=_object({"case_id": _string("sys_id or number of the case")}, ["case_id"]),
    )
    def get_case(ctx: ToolContext, case_id: str) -> dict[str, Any]:
        case = _case(ctx, case_id)
        case["comments"] = _select(
            ctx,
            "SELECT author, body, sys_created_on FROM case_comment WHERE case_id = ?"
            " ORDER BY sys_created_on, rowid",
            case["sys_id"],
        )
        return case

    @tool(
        description="Add a comment to a case as the acting user.",
        input_schema=_object(
            {"case_id": _string("sys_id or number of the case"), "body": _string("Comment text")},
            ["case_id", "body"],
        ),
    )
    def add_case_comment(ctx: ToolContext, case_id: str, body: str) -> dict[str, Any]:
        case = _case(ctx, case_id)
        if not body.strip():
            raise ToolError("the comment is empty")
        sys_id = f"cmt_{_next_id(ctx, 'case_comment', 'cmt_'):03d}"
        ctx.connection.execute(
            "INSERT INTO case_comment VALUES (?, ?, ?, ?, datetime('now'))",
            (sys_id, case["sys_id"], ctx.user_email or "unknown", body),
        )
        _update(ctx.connection, "case", case["sys_id"], {})
        return _one(ctx, "SELECT * FROM case_comment WHERE sys_id = ?", sys_id) or {}

    return registry
