"""
The FastAPI + asyncpg peer of issue 14: the same GET /v2/tms-api/loads/{ref} on the same PostgreSQL
database, written the way a Python team would write it (asyncpg pool of 10 with its statement cache,
a pydantic response model, uvicorn with uvloop and httptools, one process like our one Node process):

  1. the API key by its SHA-256 hash (401 when missing or revoked, 403 without read:loads),
  2. the load joined to its customer and carrier,
  3. its stops joined to their locations,
  4. its financial rates,

then the response model. It does not match reps to workspace users (service_user_id stays null) and
has no rate limits, request ids or metrics: less work than Lanebridge does for the same answer.

  DATABASE_URL=postgres://... python3 -m uvicorn app:app --app-dir bench/peer --port 18186 \
      --loop uvloop --http httptools --no-access-log
"""
import hashlib
import json
import os
from typing import List, Optional

import asyncpg
from fastapi import FastAPI, Header, HTTPException
from pydantic import BaseModel


class TeamMember(BaseModel):
    name: Optional[str] = None
    email: Optional[str] = None
    external_reference_id: Optional[str] = None
    service_user_id: Optional[str] = None


class Stop(BaseModel):
    id: str
    stop_number: int
    stop_type: str
    location_external_reference_id: str
    location_name: str
    early_arrival: str
    late_arrival: str


class Rate(BaseModel):
    rate_entity: str
    amount: float
    currency: str
    rate_type: str
    description: Optional[str] = None


class Load(BaseModel):
    id: str
    external_reference_id: str
    status: str
    equipment_type: str
    transport_mode: str
    description: Optional[str] = None
    customer_id: str
    customer_external_reference_id: str
    customer_name: str
    carrier_external_reference_id: Optional[str] = None
    carrier_name: Optional[str] = None
    weight: Optional[float] = None
    weight_uom: Optional[str] = None
    total_distance: Optional[float] = None
    max_buy_rate: Optional[float] = None
    max_buy_rate_source: Optional[str] = None
    stops: List[Stop]
    financial_rates: List[Rate]
    sales_rep: Optional[TeamMember] = None
    dispatcher_rep: Optional[TeamMember] = None
    assigned_dispatcher: Optional[str] = None
    actual_dispatcher: Optional[str] = None
    operation_user: Optional[str] = None
    account_manager: Optional[str] = None
    created_at: str
    updated_at: str


app = FastAPI()
pool: Optional[asyncpg.Pool] = None


@app.on_event("startup")
async def startup() -> None:
    global pool
    pool = await asyncpg.create_pool(os.environ["DATABASE_URL"], min_size=10, max_size=10)


def member(raw: Optional[str]) -> Optional[TeamMember]:
    return TeamMember(**json.loads(raw)) if raw else None


@app.get("/healthz")
async def healthz() -> dict:
    return {"ok": True}


@app.get("/v2/tms-api/loads/{ref}", response_model=Load)
async def get_load(ref: str, x_api_key: str = Header(...)) -> Load:
    key_hash = hashlib.sha256(x_api_key.encode()).hexdigest()
    async with pool.acquire() as conn:
        key = await conn.fetchrow("select org_id, scopes, revoked_at from api_keys where key_hash = $1", key_hash)
        if key is None or key["revoked_at"] is not None:
            raise HTTPException(status_code=401, detail="invalid API key")
        if "read:loads" not in key["scopes"].split(","):
            raise HTTPException(status_code=403, detail="missing scope read:loads")
        load = await conn.fetchrow(
            """select l.*, c.external_reference_id as customer_ref, c.name as customer_name,
                      k.external_reference_id as carrier_ref, k.name as carrier_name
               from loads l join customers c on c.id = l.customer_id left join carriers k on k.id = l.carrier_id
               where l.org_id = $1 and l.external_reference_id = $2""",
            key["org_id"], ref,
        )
        if load is None:
            raise HTTPException(status_code=404, detail="load not found")
        stops = await conn.fetch(
            """select s.id, s.stop_number, s.stop_type, s.early_arrival, s.late_arrival,
                      loc.external_reference_id as location_ref, loc.name as location_name
               from load_stops s join locations loc on loc.id = s.location_id
               where s.load_id = $1 order by s.stop_number""",
            load["id"],
        )
        rates = await conn.fetch(
            "select rate_entity, amount, currency, rate_type, description from load_rates where load_id = $1 order by position",
            load["id"],
        )
    return Load(
        id=load["id"], external_reference_id=load["external_reference_id"], status=load["status"],
        equipment_type=load["equipment_type"], transport_mode=load["transport_mode"], description=load["description"],
        customer_id=load["customer_id"], customer_external_reference_id=load["customer_ref"], customer_name=load["customer_name"],
        carrier_external_reference_id=load["carrier_ref"], carrier_name=load["carrier_name"],
        weight=load["weight"], weight_uom=load["weight_uom"], total_distance=load["total_distance"],
        max_buy_rate=load["max_buy_rate"], max_buy_rate_source=load["max_buy_rate_source"],
        stops=[Stop(id=s["id"], stop_number=s["stop_number"], stop_type=s["stop_type"], location_external_reference_id=s["location_ref"],
                    location_name=s["location_name"], early_arrival=s["early_arrival"], late_arrival=s["late_arrival"]) for s in stops],
        financial_rates=[Rate(**dict(r)) for r in rates],
        sales_rep=member(load["sales_rep"]), dispatcher_rep=member(load["dispatcher_rep"]),
        assigned_dispatcher=load["assigned_dispatcher"], actual_dispatcher=load["actual_dispatcher"],
        operation_user=load["operation_user"], account_manager=load["account_manager"],
        created_at=load["created_at"], updated_at=load["updated_at"],
    )
