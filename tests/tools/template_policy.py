"""Fails if template.yaml loses its least-privilege permissions or its limits.

    python tests/tools/template_policy.py template.yaml

Static checks of the template as written, resolved offline by function_env.py's resolver for
a few parameter values (both DownloadModes, and chosen values for the limits, to see that
each parameter really is applied). Functions are told apart by the binary they run (CodeUri
build/lambda/<binary>/...), not by their logical IDs. A policy these checks cannot read (a
managed policy, a SAM policy template, a function's own Role) fails the checks that must
vouch for that function. Every failed check is listed, and the exit status is 1 if any.

Checks (see CHECKS at the end):
  download-env             TFREG_DOWNLOADS, TFREG_URL_TTL and TFREG_URL_SECRET only on the
                           functions that make download URLs (with redirect, the others
                           would die at cold start wanting the secret); those get all three.
  indexer-denies-tokens    the indexer's explicit Deny of item reads and writes whose
                           partition key (dynamodb:LeadingKeys) is "tokens".
  api-token-updates        the API functions keep GetItem and Query, and their UpdateItem is
                           limited to leading key "tokens", attributes within pk, sk and
                           last_used_at, and ReturnValues NONE.
  no-unbounded-writes      no function may put, update or delete table items unless it is
                           the restricted "last used" update, the indexer's writes that its
                           Deny bounds, the login function's PutItem (tokens and its
                           one-time records) and DeleteItem (its one-time records only), or
                           the usage function's PutItem and UpdateItem in the usage/
                           partitions (download counts) only.
  no-table-scan            no function may scan the table (a scan names no partition, so
                           the tokens Deny cannot see it).
  downloads-s3-prefixes    the downloads function reads exactly modules/*, providers/* and
                           mirror/* of the bucket.
  discovery-no-policies    the discovery function has no policies and no role of its own.
  indexer-s3-prefixes      the indexer reads exactly modules/*, providers/*, keys/* and
                           mirror/*, and may list the bucket itself.
  readers-s3-prefixes      modules, providers and web read only their files and the
                           overflow documents; the mirror also reads and writes the upstream
                           cache's records (upstream/*) and may list the bucket.
  fetcher-s3-prefixes      the fetcher reads and writes exactly upstream/* and mirror/*, may
                           list the bucket, and has no access to the table at all.
  table-ttl                DynamoDB TTL enabled on the attribute `ttl`.
  api-throttling           the throttling parameters are the HTTP API's default route
                           settings, and every route belongs to that API.
  reserved-concurrency     FunctionConcurrencyLimit is every function's reserved concurrency,
                           and 0 reserves none (a reservation of 0 would stop the function).
  versions-kept            the bucket keeps object versions and no lifecycle rule expires
                           any (published versions are served from their first object
                           version, whatever is uploaded over it) but the replaced versions
                           of derived records (.tfreg/documents/, upstream/).
  access-logs              the HTTP API logs to a log group of the template kept for
                           LogRetentionDays, in a one-line JSON format with the agreed fields,
                           $context.path among them, and no header, override, authorizer or
                           query string variable.
"""

import fnmatch
import json
import re
import sys
from pathlib import Path, PurePosixPath

sys.dont_write_bytecode = True  # no __pycache__ next to the tools
sys.path.insert(0, str(Path(__file__).resolve().parent))
from function_env import Template, TemplateError, code_uri, function_environments  # noqa: E402

# Binaries (crates/functions/*) by what they do.
URL_MAKERS = {"modules", "providers", "mirror", "downloads"}
API_READERS = {"modules", "providers", "mirror", "web"}
DOWNLOAD_VARIABLES = {"TFREG_DOWNLOADS", "TFREG_URL_TTL", "TFREG_URL_SECRET"}

TOKENS_PARTITION = "tokens"
TOKEN_UPDATE_ATTRIBUTES = {"pk", "sk", "last_used_at"}
WRITE_ACTIONS = [
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:PartiQLInsert",
    "dynamodb:PartiQLUpdate",
    "dynamodb:PartiQLDelete",
]
INDEXER_DENIED = [
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
]
SCAN_ACTIONS = ["dynamodb:Scan", "dynamodb:PartiQLSelect"]
S3_OBJECT_READS = {"s3:getobject", "s3:getobjectversion"}

REQUIRED_LOG_VARIABLES = {
    "$context.requestId",
    "$context.identity.sourceIp",
    "$context.requestTime",
    "$context.httpMethod",
    "$context.path",
    "$context.routeKey",
    "$context.status",
    "$context.responseLength",
    "$context.integrationLatency",
    "$context.identity.userAgent",
}
# Variables that carry neither tokens nor signatures; anything else is refused.
HARMLESS_LOG_VARIABLES = REQUIRED_LOG_VARIABLES | {
    "$context.accountId",
    "$context.apiId",
    "$context.dataProcessed",
    "$context.domainName",
    "$context.error.message",
    "$context.error.messageString",
    "$context.error.responseType",
    "$context.extendedRequestId",
    "$context.integration.error",
    "$context.integration.integrationStatus",
    "$context.integration.latency",
    "$context.integration.status",
    "$context.integrationErrorMessage",
    "$context.integrationStatus",
    "$context.protocol",
    "$context.requestTimeEpoch",
    "$context.responseLatency",
    "$context.stage",
}
SECRET_BEARING_LOG_VARIABLE = re.compile(r"requestoverride|responseoverride|header|querystring|authorizer", re.I)

# With an identity document, so the login function exists and is checked too.
IDENTITY = '{"ci": [{"name": "r", "issuer": "https://ci.example", "audience": "a", "claims": {"repository": "acme/x"}, "namespaces": ["acme"]}]}'
DEFAULT = {}
REDIRECT = {"DownloadMode": "redirect", "IdentityConfig": IDENTITY}


class Checked:
    """The template under several parameter values (loaded once each)."""

    def __init__(self, path):
        self.path = path
        self._templates = {}

    def template(self, params):
        key = tuple(sorted(params.items()))
        if key not in self._templates:
            self._templates[key] = Template(self.path, dict(params))
        return self._templates[key]


# ---- reading the template ------------------------------------------------------------------
# Where the upstream cache keeps its records (never a published file; packages go to mirror/).
UPSTREAM_PREFIX = "upstream/"
# Where the indexer keeps documents too large for a table item.
DOCUMENTS_PREFIX = ".tfreg/documents/"


def binary_of(uri):
    return PurePosixPath(str(uri)).parent.name if uri else None


def functions(template):
    """(logical ID, binary, resolved properties) of every function that exists."""
    out = []
    for logical_id in template.existing("AWS::Serverless::Function"):
        properties = template.properties(logical_id)
        out.append((logical_id, binary_of(code_uri(properties)), properties))
    return out


def functions_running(template, binary):
    return [(logical_id, props) for logical_id, b, props in functions(template) if b == binary]


def as_list(value):
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


class Statement:
    def __init__(self, raw):
        self.raw = raw
        self.effect = raw.get("Effect")
        self.not_action = "NotAction" in raw
        self.actions = [str(a).lower() for a in as_list(raw.get("NotAction" if self.not_action else "Action"))]
        self.not_resource = "NotResource" in raw
        self.resources = [str(r) for r in as_list(raw.get("NotResource" if self.not_resource else "Resource"))]
        self.conditions = {
            str(operator).lower(): {str(k).lower(): [str(v) for v in as_list(vals)] for k, vals in (keys or {}).items()}
            for operator, keys in (raw.get("Condition") or {}).items()
        }

    def names(self, action):
        matched = any(fnmatch.fnmatchcase(action.lower(), pattern) for pattern in self.actions)
        return matched != self.not_action

    def allows(self, action):
        return self.effect == "Allow" and self.names(action)

    def covers(self, arn):
        matched = any(fnmatch.fnmatchcase(arn, pattern) for pattern in self.resources)
        return matched != self.not_resource

    def condition(self, operator, key):
        return self.conditions.get(operator.lower(), {}).get(key.lower())

    def __str__(self):
        return json.dumps(self.raw, sort_keys=True)


def statements(logical_id, properties):
    """A function's policy statements, and what cannot be read of its permissions."""
    found, unreadable = [], []
    if "Role" in properties:
        unreadable.append(f"{logical_id} has its own Role {properties['Role']!r}, whose permissions cannot be checked here")
    for policy in as_list(properties.get("Policies")):
        if isinstance(policy, dict) and "Statement" in policy:
            found.extend(Statement(s) for s in as_list(policy["Statement"]))
        else:
            unreadable.append(
                f"{logical_id} has a policy these checks cannot read "
                f"(managed policy or SAM policy template): {policy!r}"
            )
    return found, unreadable


def table_arns(template):
    return [template.get_att(t, "Arn") for t in template.existing("AWS::DynamoDB::Table")]


def bucket_arn(template):
    buckets = template.existing("AWS::S3::Bucket")
    if len(buckets) != 1:
        raise TemplateError(f"expected one S3 bucket, found {buckets}")
    name = template.properties(buckets[0]).get("BucketName") or template.ref(buckets[0])
    return f"arn:aws:s3:::{name}"


def on_table(template, statement):
    return any(statement.covers(arn) for arn in table_arns(template))


def token_update_problems(statement):
    """Why an UpdateItem grant is not limited to recording a token's last use ([] if it is)."""
    problems = []
    leading = statement.condition("ForAllValues:StringEquals", "dynamodb:LeadingKeys")
    if not leading or set(leading) - {TOKENS_PARTITION}:
        problems.append(
            f'its dynamodb:LeadingKeys is not limited to "{TOKENS_PARTITION}" '
            f"with ForAllValues:StringEquals (found {leading})"
        )
    attributes = statement.condition("ForAllValues:StringEquals", "dynamodb:Attributes")
    if not attributes or set(attributes) - TOKEN_UPDATE_ATTRIBUTES:
        problems.append(
            f"its dynamodb:Attributes is not limited to {sorted(TOKEN_UPDATE_ATTRIBUTES)} "
            f"with ForAllValues:StringEquals (found {attributes})"
        )
    returns = statement.condition("StringEqualsIfExists", "dynamodb:ReturnValues") or statement.condition(
        "StringEquals", "dynamodb:ReturnValues"
    )
    if not returns or set(returns) - {"NONE"}:
        problems.append(f"its dynamodb:ReturnValues is not limited to NONE (found {returns})")
    return problems


LOGIN_PUT_PARTITIONS = {TOKENS_PARTITION, "grants#code"}
LOGIN_DELETE_PARTITIONS = {"grants#code"}


def login_write_problems(statement, action):
    """Why a write of the login function is not limited to issuing tokens (PutItem) and
    taking its one-time records (DeleteItem) ([] if it is)."""
    allowed = {"dynamodb:PutItem": LOGIN_PUT_PARTITIONS, "dynamodb:DeleteItem": LOGIN_DELETE_PARTITIONS}.get(action)
    if allowed is None:
        return [f"the login function has no business with {action}"]
    leading = statement.condition("ForAllValues:StringEquals", "dynamodb:LeadingKeys")
    if not leading or set(leading) - allowed:
        return [f"its dynamodb:LeadingKeys is not limited to {sorted(allowed)} (found {leading})"]
    return []


USAGE_PREFIX = "usage/"


def usage_write_problems(statement, action):
    """Why a write of the usage function is not limited to the download counts' partitions
    ([] if it is)."""
    if action not in ("dynamodb:PutItem", "dynamodb:UpdateItem"):
        return [f"the usage function has no business with {action}"]
    leading = statement.condition("ForAllValues:StringLike", "dynamodb:LeadingKeys") or statement.condition(
        "ForAllValues:StringEquals", "dynamodb:LeadingKeys"
    )
    if not leading or any(not value.startswith(USAGE_PREFIX) for value in leading):
        return [f"its dynamodb:LeadingKeys is not limited to {USAGE_PREFIX}* (found {leading})"]
    return []


def tokens_deny_actions(template, stmts):
    """The actions a Deny refuses on the tokens partition, whatever else the request says."""
    denied = set()
    for s in stmts:
        if s.effect != "Deny" or s.not_action or not on_table(template, s):
            continue
        operators = s.conditions
        if set(operators) - {"foranyvalue:stringequals", "foranyvalue:stringlike"}:
            continue  # any other condition narrows the Deny
        keys = {k for values in operators.values() for k in values}
        leading = [v for values in operators.values() for v in values.get("dynamodb:leadingkeys", [])]
        if keys == {"dynamodb:leadingkeys"} and TOKENS_PARTITION in leading:
            denied.update(a for a in INDEXER_DENIED + WRITE_ACTIONS if s.names(a))
    return denied


def s3_grants(stmts):
    """(object resources, bucket resources, unexpected actions, written resources) of a
    function's S3 Allows. Writes are PutObject, DeleteObject and AbortMultipartUpload (of a
    write in parts); anything else is unexpected."""
    objects, buckets, unexpected, written = set(), set(), set(), set()
    for s in stmts:
        if s.effect != "Allow":
            continue
        if s.not_action or s.not_resource:
            if s.names("s3:GetObject") or s.names("s3:PutObject"):
                unexpected.add(str(s))
            continue
        for action in s.actions:
            if action == "s3:listbucket":
                buckets.update(s.resources)
            elif action in S3_OBJECT_READS:
                objects.update(s.resources)
            elif action in ("s3:putobject", "s3:deleteobject", "s3:abortmultipartupload"):
                written.update(s.resources)
            elif action.startswith("s3:") or action == "*":
                unexpected.add(action)
    return objects, buckets, unexpected, written


# ---- the checks ----------------------------------------------------------------------------
def check_download_env(checked):
    problems = []
    for params in (DEFAULT, REDIRECT):
        mode = params.get("DownloadMode", "presigned")
        for logical_id, env in function_environments(checked.template(params)).items():
            binary = binary_of(env["__code_uri__"])
            present = DOWNLOAD_VARIABLES & set(env)
            if binary in URL_MAKERS:
                for missing in sorted(DOWNLOAD_VARIABLES - present):
                    problems.append(f"DownloadMode={mode}: {logical_id} ({binary}) makes download URLs but gets no {missing}")
                if mode == "redirect" and (env.get("TFREG_DOWNLOADS") != "redirect" or len(env.get("TFREG_URL_SECRET", "")) < 32):
                    problems.append(
                        f"DownloadMode=redirect: {logical_id} ({binary}) does not get "
                        "TFREG_DOWNLOADS=redirect with a secret"
                    )
            else:
                for extra in sorted(present):
                    problems.append(
                        f"DownloadMode={mode}: {logical_id} ({binary}) makes no download URLs but gets {extra} "
                        "(with DownloadMode=redirect its configuration requires TFREG_URL_SECRET)"
                    )
    return problems


def check_indexer_denies_tokens(checked):
    template = checked.template(DEFAULT)
    indexers = functions_running(template, "indexer")
    if not indexers:
        return ["no function runs the indexer"]
    problems = []
    for logical_id, props in indexers:
        stmts, _ = statements(logical_id, props)
        denied = tokens_deny_actions(template, stmts)
        missing = [a for a in INDEXER_DENIED if a not in denied]
        if missing:
            problems.append(
                f"{logical_id} has no Deny of {', '.join(missing)} on the table for dynamodb:LeadingKeys "
                f'"{TOKENS_PARTITION}" (ForAnyValue:StringEquals, and no other condition to narrow it)'
            )
    return problems


def check_api_token_updates(checked):
    template = checked.template(DEFAULT)
    problems = []
    for logical_id, binary, props in functions(template):
        if binary not in API_READERS:
            continue
        stmts, unreadable = statements(logical_id, props)
        problems += unreadable
        for needed in ("dynamodb:GetItem", "dynamodb:Query"):
            if not any(s.allows(needed) and on_table(template, s) for s in stmts):
                problems.append(f"{logical_id} ({binary}) may not {needed} on the table: it reads tokens and records")
        updates = [s for s in stmts if s.allows("dynamodb:UpdateItem") and on_table(template, s)]
        if not updates:
            problems.append(f"{logical_id} ({binary}) may not UpdateItem: it could not record a token's last use")
        for s in updates:
            for why in token_update_problems(s):
                problems.append(f"{logical_id} ({binary}) may UpdateItem but {why}: {s}")
    return problems


def check_no_unbounded_writes(checked):
    template = checked.template(REDIRECT)
    problems = []
    for logical_id, binary, props in functions(template):
        stmts, unreadable = statements(logical_id, props)
        problems += unreadable
        bounded = tokens_deny_actions(template, stmts) if binary == "indexer" else set()
        for s in stmts:
            if s.effect != "Allow" or not on_table(template, s):
                continue
            for action in WRITE_ACTIONS:
                if not s.allows(action):
                    continue
                if action == "dynamodb:UpdateItem" and not token_update_problems(s):
                    continue
                if binary == "login" and not login_write_problems(s, action):
                    continue
                if binary == "usage" and not usage_write_problems(s, action):
                    continue
                if action in bounded:
                    continue
                problems.append(f"{logical_id} ({binary}) may {action} on the table without the tokens restriction: {s}")
    return problems


def check_no_table_scan(checked):
    template = checked.template(REDIRECT)
    problems = []
    for logical_id, binary, props in functions(template):
        stmts, unreadable = statements(logical_id, props)
        problems += unreadable
        for s in stmts:
            for action in SCAN_ACTIONS:
                if s.allows(action) and on_table(template, s):
                    problems.append(f"{logical_id} ({binary}) may {action} the table, tokens included: {s}")
    return problems


def check_s3_prefixes(checked, binary, params, prefixes, list_bucket, writes=()):
    template = checked.template(params)
    running = functions_running(template, binary)
    if not running:
        return [f"no function runs the {binary} binary (with {params or 'the default parameters'})"]
    bucket = bucket_arn(template)
    expected = {f"{bucket}/{prefix}/*" for prefix in prefixes}
    problems = []
    for logical_id, props in running:
        stmts, unreadable = statements(logical_id, props)
        problems += unreadable
        objects, buckets, unexpected, written = s3_grants(stmts)
        expected_writes = {f"{bucket}/{prefix}/*" for prefix in writes}
        if written != expected_writes:
            problems.append(
                f"{logical_id} ({binary}) writes S3 objects {sorted(written)}; expected exactly {sorted(expected_writes)}"
            )
        if objects != expected:
            problems.append(
                f"{logical_id} ({binary}) reads S3 objects {sorted(objects)}; expected exactly {sorted(expected)}"
                + (f" (outside them: {sorted(objects - expected)})" if objects - expected else "")
            )
        if list_bucket and buckets != {bucket}:
            problems.append(
                f"{logical_id} ({binary}) may ListBucket on {sorted(buckets)}; expected exactly "
                f"{bucket} (S3 answers 403 for deleted objects without it)"
            )
        if not list_bucket and buckets:
            problems.append(f"{logical_id} ({binary}) may ListBucket on {sorted(buckets)}; it needs no listing")
        if unexpected:
            problems.append(
                f"{logical_id} ({binary}) has S3 permissions beyond GetObject, GetObjectVersion "
                f"and ListBucket: {sorted(unexpected)}"
            )
    return problems


def check_downloads_s3_prefixes(checked):
    return check_s3_prefixes(checked, "downloads", REDIRECT, ["modules", "providers", "mirror"], list_bucket=False)


def check_indexer_s3_prefixes(checked):
    return check_s3_prefixes(checked, "indexer", DEFAULT, ["modules", "providers", "keys", "mirror", ".tfreg/documents"],
                             list_bucket=True, writes=[".tfreg/documents"])


def check_readers_s3_prefixes(checked):
    """The functions that read documents may read the overflow documents, and their own files."""
    problems = []
    for binary, prefixes in [("modules", ["modules"]), ("providers", ["providers"]), ("web", [])]:
        problems += check_s3_prefixes(checked, binary, DEFAULT, prefixes + [".tfreg/documents"], list_bucket=False)
    # The mirror keeps the upstream cache's version lists, release records and fetch requests.
    problems += check_s3_prefixes(checked, "mirror", DEFAULT, ["mirror", "providers", "upstream", ".tfreg/documents"],
                                  list_bucket=True, writes=["upstream"])
    return problems


def check_fetcher_s3_prefixes(checked):
    """The fetcher stores verified packages and refusals, and never touches the table."""
    problems = check_s3_prefixes(checked, "fetcher", DEFAULT, ["upstream", "mirror"], list_bucket=True,
                                 writes=["upstream", "mirror"])
    template = checked.template(DEFAULT)
    for logical_id, props in functions_running(template, "fetcher"):
        stmts, unreadable = statements(logical_id, props)
        problems += unreadable
        for s in stmts:
            if s.effect == "Allow" and on_table(template, s):
                problems.append(f"{logical_id} (fetcher) may reach the table, which it never reads: {s}")
    return problems


def check_discovery_no_policies(checked):
    template = checked.template(DEFAULT)
    running = functions_running(template, "discovery")
    if not running:
        return ["no function runs the discovery binary"]
    problems = []
    for logical_id, props in running:
        for key in ("Policies", "Role"):
            if props.get(key):
                problems.append(
                    f"{logical_id} (discovery) has {key} {props[key]!r}; "
                    "it is answered without a token and needs none"
                )
    return problems


def check_table_ttl(checked):
    template = checked.template(DEFAULT)
    tables = template.existing("AWS::DynamoDB::Table")
    if not tables:
        return ["the template has no DynamoDB table"]
    problems = []
    for table in tables:
        spec = template.properties(table).get("TimeToLiveSpecification") or {}
        if spec.get("AttributeName") != "ttl" or str(spec.get("Enabled")).lower() != "true":
            problems.append(f"{table} has no TimeToLiveSpecification enabled on attribute `ttl` (found {spec})")
    return problems


def check_table_retained(checked):
    """The table holds the tokens: stack deletion or replacement must keep it."""
    template = checked.template(DEFAULT)
    problems = []
    for table in template.existing("AWS::DynamoDB::Table"):
        resource = template.resources[table]
        for policy in ("DeletionPolicy", "UpdateReplacePolicy"):
            if resource.get(policy) != "Retain":
                problems.append(f"{table} has {policy} {resource.get(policy)!r}, not Retain")
    return problems or ([] if template.existing("AWS::DynamoDB::Table") else ["no table"])


def check_versions_kept(checked):
    """Published versions are served from their first object version: none may go."""
    template = checked.template(DEFAULT)
    buckets = template.existing("AWS::S3::Bucket")
    if not buckets:
        return ["the template has no bucket"]
    problems = []
    for bucket in buckets:
        props = template.properties(bucket)
        status = (props.get("VersioningConfiguration") or {}).get("Status")
        if status != "Enabled":
            problems.append(f"{bucket} has versioning {status!r}, not Enabled")
        rules = (props.get("LifecycleConfiguration") or {}).get("Rules") or []
        for rule in rules:
            expiring = [k for k in ("Expiration", "ExpirationInDays", "ExpirationDate",
                                    "NoncurrentVersionExpiration", "NoncurrentVersionExpirationInDays",
                                    "NoncurrentVersionTransitions", "NoncurrentVersionTransition",
                                    "Transitions", "Transition")
                        if k in rule]
            # The indexer's derived documents and the upstream cache's replaced records (version
            # lists, fetch requests) may go; nothing published may.
            prefix = rule.get("Prefix") or ((rule.get("Filter") or {}).get("Prefix"))
            if prefix in (DOCUMENTS_PREFIX, UPSTREAM_PREFIX) and not (
                set(expiring) - {"NoncurrentVersionExpiration", "NoncurrentVersionExpirationInDays"}
            ):
                continue
            if expiring and str(rule.get("Status")) == "Enabled":
                problems.append(f"{bucket} lifecycle rule {rule.get('Id')!r} has {', '.join(expiring)}")
    return problems


def check_alarm_notifies(checked):
    """With AlarmEmail (or AlarmTopicArn), the dead-letter alarm tells someone."""
    problems = []
    for params, what in (({"AlarmEmail": "ops@example.com"}, "AlarmEmail"),
                         ({"AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:ops"}, "AlarmTopicArn")):
        template = checked.template(params)
        alarms = template.existing("AWS::CloudWatch::Alarm")
        if not alarms:
            problems.append("no alarm")
        for alarm in alarms:
            actions = template.properties(alarm).get("AlarmActions") or []
            if not actions:
                problems.append(f"{alarm} has no AlarmActions with {what} set")
    return problems


def declared_number(template, name):
    spec = (template.document.get("Parameters") or {}).get(name)
    if spec is None:
        return f"no parameter {name}"
    if spec.get("Type") != "Number" or not str(spec.get("Default", "")).isdigit():
        return f"parameter {name} is not a Number with a default (found {spec})"
    return None


def check_api_throttling(checked):
    problems = []
    base = checked.template(DEFAULT)
    for name in ("ApiThrottlingRateLimit", "ApiThrottlingBurstLimit"):
        problem = declared_number(base, name)
        if problem:
            return [problem]
        if int(base.document["Parameters"][name]["Default"]) < 1:
            problems.append(f"{name} defaults to less than 1")
    template = checked.template({**REDIRECT, "ApiThrottlingRateLimit": "13", "ApiThrottlingBurstLimit": "17"})
    apis = template.existing("AWS::Serverless::HttpApi")
    if not apis:
        return problems + ["the template has no AWS::Serverless::HttpApi"]
    for api in apis:
        props = template.properties(api)
        settings = props.get("DefaultRouteSettings") or {}
        if str(settings.get("ThrottlingRateLimit")) != "13":
            problems.append(f"{api}: DefaultRouteSettings.ThrottlingRateLimit is not ApiThrottlingRateLimit (found {settings})")
        if str(settings.get("ThrottlingBurstLimit")) != "17":
            problems.append(f"{api}: DefaultRouteSettings.ThrottlingBurstLimit is not ApiThrottlingBurstLimit (found {settings})")
        for route, route_settings in (props.get("RouteSettings") or {}).items():
            if any(k.startswith("Throttling") for k in route_settings or {}):
                problems.append(f"{api}: route {route} overrides the throttling: {route_settings}")
    throttled = {template.ref(api) for api in apis}
    for logical_id, binary, props in functions(template):
        for event_name, event in (props.get("Events") or {}).items():
            if event.get("Type") == "HttpApi" and (event.get("Properties") or {}).get("ApiId") not in throttled:
                problems.append(
                    f"{logical_id} ({binary}): event {event_name} is not on the throttled HTTP API "
                    "(without ApiId, SAM makes an implicit API with neither throttling nor access logs)"
                )
    return problems


def check_reserved_concurrency(checked):
    base = checked.template(DEFAULT)
    problem = declared_number(base, "FunctionConcurrencyLimit")
    if problem:
        return [problem]
    problems = []
    limited = checked.template({**REDIRECT, "FunctionConcurrencyLimit": "7"})
    for logical_id, binary, props in functions(limited):
        value = props.get("ReservedConcurrentExecutions")
        if str(value) != "7":
            problems.append(f"FunctionConcurrencyLimit=7: {logical_id} ({binary}) has ReservedConcurrentExecutions {value!r}")
    unlimited = checked.template({**REDIRECT, "FunctionConcurrencyLimit": "0"})
    for logical_id, binary, props in functions(unlimited):
        if "ReservedConcurrentExecutions" in props:
            problems.append(
                f"FunctionConcurrencyLimit=0: {logical_id} ({binary}) has ReservedConcurrentExecutions "
                f"{props['ReservedConcurrentExecutions']!r}; 0 must reserve nothing (a reservation of 0 stops the function)"
            )
    return problems


def check_access_logs(checked):
    template = checked.template({"LogRetentionDays": "7"})
    apis = template.existing("AWS::Serverless::HttpApi")
    if not apis:
        return ["the template has no AWS::Serverless::HttpApi"]
    log_groups = {template.get_att(g, "Arn"): g for g in template.existing("AWS::Logs::LogGroup")}
    problems = []
    for api in apis:
        settings = template.properties(api).get("AccessLogSettings")
        if not settings:
            problems.append(f"{api} has no AccessLogSettings")
            continue
        group = log_groups.get(settings.get("DestinationArn"))
        if group is None:
            problems.append(f"{api}: access logs go to {settings.get('DestinationArn')!r}, not a log group of this template")
        elif str(template.properties(group).get("RetentionInDays")) != "7":
            problems.append(f"{api}: its access log group {group} is not kept for LogRetentionDays")
        text = settings.get("Format")
        if not isinstance(text, str):
            problems.append(f"{api}: the access log format is not a string: {text!r}")
            continue
        if "\n" in text:
            problems.append(f"{api}: the access log format spans lines; API Gateway wants one line")
        try:
            if not isinstance(json.loads(text), dict):
                raise ValueError("not an object")
        except ValueError as e:
            problems.append(f"{api}: the access log format is not a JSON object ({e}): {text}")
        variables = set(re.findall(r"\$[A-Za-z][\w.\-]*", text))
        for missing in sorted(REQUIRED_LOG_VARIABLES - variables):
            problems.append(f"{api}: the access log format lacks {missing}")
        for variable in sorted(variables - HARMLESS_LOG_VARIABLES):
            why = (
                "it can carry headers, the Authorization token or query strings (download signatures)"
                if SECRET_BEARING_LOG_VARIABLE.search(variable)
                else "it is not known to be free of tokens and signatures"
            )
            problems.append(f"{api}: the access log format uses {variable}: {why}")
    return problems


CHECKS = [
    ("download-env", "download settings only on the four URL-making functions", check_download_env),
    ("indexer-denies-tokens", 'the indexer is denied the "tokens" partition', check_indexer_denies_tokens),
    ("api-token-updates", "API functions update only a token's last_used_at", check_api_token_updates),
    ("no-unbounded-writes", "no unrestricted PutItem/UpdateItem/DeleteItem", check_no_unbounded_writes),
    ("no-table-scan", "no function may scan the table", check_no_table_scan),
    ("downloads-s3-prefixes", "downloads reads only modules/, providers/, mirror/", check_downloads_s3_prefixes),
    ("discovery-no-policies", "discovery has no permissions", check_discovery_no_policies),
    ("indexer-s3-prefixes", "indexer reads only modules/, providers/, keys/, mirror/, .tfreg/documents/ and writes only the last",
     check_indexer_s3_prefixes),
    ("readers-s3-prefixes", "modules, providers, mirror and web read only their files and .tfreg/documents/ (mirror: upstream/ too)",
     check_readers_s3_prefixes),
    ("fetcher-s3-prefixes", "fetcher reads and writes only upstream/ and mirror/, and no table", check_fetcher_s3_prefixes),
    ("table-ttl", "TTL on the attribute ttl", check_table_ttl),
    ("api-throttling", "throttling parameters applied to every route", check_api_throttling),
    ("reserved-concurrency", "FunctionConcurrencyLimit on every function, 0 = none", check_reserved_concurrency),
    ("access-logs", "access logs without headers or query strings", check_access_logs),
    ("table-retained", "the table (and its tokens) survives stack deletion and replacement", check_table_retained),
    ("alarm-notifies", "the dead-letter alarm notifies AlarmEmail or AlarmTopicArn", check_alarm_notifies),
    ("versions-kept", "the bucket keeps every object version but the indexer's documents'", check_versions_kept),
]


def main(path):
    checked = Checked(path)
    failed = 0
    for name, summary, check in CHECKS:
        try:
            problems = check(checked)
        except TemplateError as e:
            problems = [f"cannot evaluate the template: {e}"]
        if problems:
            failed += 1
            print(f"FAIL {name}: {summary}")
            for problem in problems:
                print(f"     - {problem}")
        else:
            print(f"ok   {name}: {summary}")
    if failed:
        sys.exit(f"{path}: {failed} of {len(CHECKS)} policy checks failed")
    print(f"{path}: all {len(CHECKS)} policy checks pass")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "template.yaml")
