"""The word tables tool search reads queries with, written out: synonyms, phrasal verbs, product
abbreviations. Data only; ``queries`` parses them (with ``words.stem``) into ``SYNONYMS``,
``PHRASAL_VERBS`` and ``ALIASES``."""

from __future__ import annotations

# How the tools say it: how people say it. Written from the 54 shared catalogues' tool-name
# vocabulary (the word before the colon is one the tools use; after it, the words people use for the
# same thing). A query word (lightly stemmed) after a colon also searches for the words before it.
SYNONYMS_TEXT = """
pull request: pr
merge request: mr
issue: ticket bug error story defect
repository: repo codebase
directory: folder dir
document: doc docx
spreadsheet: sheet workbook xlsx
presentation: slides slide deck
gmail message: email mail inbox
message: dm
thread: conversation replies
draft: compose unsent
label: tag category
filter: rule
event: meeting appointment invite call standup
calendar: agenda diary
freebusy: free busy availability available slot
office: vacation away ooo holiday leave
focus: deep_work concentrate
respond: rsvp accept decline
contact: person people phone address_book prospect lead
user: member person people account teammate colleague
customer: client buyer
collaborator: shared member
invoice: bill billing receipt
invoice item: line_item
finalize: send_invoice
subscription: plan recurring membership
coupon: discount promo voucher
dispute: chargeback
payment intent: payment charge transaction
payment link: checkout_link pay_link
price: pricing cost
balance: funds money earned revenue
refund: money_back reimburse repay
record: row entry
field: column attribute
property: field attribute
association: linked relationship tied associated
engagement: call meeting logged
object: record crm
database: db
index: indices
sql: query select
aggregate: group_by summarise summarize
explain: query_plan slow
chart: graph plot diagram visualize visualise
organization chart: org_chart hierarchy reporting
mind map: brainstorm
sankey: flow
fishbone: root_cause ishikawa
flow diagram: flowchart process
pie: proportion
venn: overlap intersection
treemap: nested breakdown
line: trend over_time
word cloud: frequency
pin map: locations markers
screenshot: capture screengrab
image: picture photo png jpg
picture: image
navigate: go visit goto url
navigate back: previous back
page: webpage site website
tab: window
click: press tap
type: enter input
fill: enter input populate
dialog: popup confirm
select option: dropdown choose pick
snapshot: accessibility dom
evaluate: javascript js script
console: printed errors
network request: api_calls traffic requests xhr
emulate: simulate throttle device mobile pretend
resize: size viewport dimensions
file upload: attach
screencast: video recording record
lighthouse audit: seo audit accessibility
heapsnapshot: memory leak heap
performance trace: load_time profile
search: find look lookup
scrape: extract
crawl: spider scan_site whole_site
map: sitemap urls links
fetch: download
comment: note remark
task story: comment
task: todo chore
close: done finish complete resolve tick
reopen: undo
completed: finished done
dependency: blocked blocker depends
subtask: sub_task smaller
section: column group
team: group squad
incident: outage
alert: alarm
monitor: watch
downtime: maintenance mute
silence: mute snooze quiet
oncall: pager rota on_duty
schedule: rota rotation shift
override: swap cover
escalation: escalate
change event: deploy deployment
log entry: timeline activity
metric: measure usage
usage: credits consumption
hover: mouse_over mouseover
incident metric: mttr mtta
responder metric: acknowledge response_time
trace: span latency
profile: flamegraph flame
annotation: marker annotate
panel image: graph_image
datasource: data source
deployment: deploy rollout replicas
pod: container
node: machine server
context: cluster
rollout: restart rollback
scale: replicas resize
exec: shell
port forward: tunnel localhost
install helm chart: helm_install
uninstall helm chart: helm_uninstall helm_delete
commit: save
write: save
diff: changed changes difference uncommitted
status: state
checkout: switch
reset: unstage undo revert
log: history
show: contents
fork: copy
pipeline: ci build
workflow: job jobs
rerun: retry restart
build failure: failed broken red
artifact: output outputs
flaky: intermittent unstable randomly
test result: failing passing tests
sprint: iteration
agile board: scrum kanban board
worklog: hours spent
transition: move
watcher: following follower watching
version: release
issue link: related relate
epic: initiative
customer request: support_request helpdesk
service desk: helpdesk support
page children: subpages child
page history: versions revisions
page views: readers viewers analytics
restriction: permission access lock
copy page: duplicate clone
project update: status_update weekly_update
release note: changelog
cycle: sprint iteration
roadmap: timeline
initiative: goal
webhook: hook callback
notification: inbox
favorite: bookmark star
edge function: serverless lambda
advisor: lint linter warning security
migration: schema_change database_change db_change
publishable key: anon anonymous api_key
bucket: storage
restore: unpause resume back_online
pause: suspend
typescript type: types
move: rename relocate
process: program command terminal
terminate: stop kill
read process output: output stdout
interact process: input repl stdin
config: settings configuration preferences
directory tree: layout structure hierarchy
file info: metadata stat modified
media file: png jpg mp3 audio video picture image
multiple file: several many batch
place: shop cafe restaurant business venue nearby station
geocode: coordinates latitude longitude lat lng location
reverse geocode: address street
directions: route drive driving walk car commute
distance matrix: far distance travel
elevation: altitude height sea_level
time: clock timezone
current: now today latest
stock: share ticker equity trading
quote: price trading
earning: earnings results
income statement: revenue profit financials
cashflow: cash_flow cash
company overview: market_cap valuation
dividend: payout yield
recommendation: analyst rating ratings
option chain: options
symbol comparison: compare versus vs
paper: article publication preprint research
citation: cite cited bibtex bibliography
abstract: summary
watch topic: notify subscribe follow track
outline: structure sections headings
documentation: docs manual guide reference
library: package framework sdk module
entity: fact remember
observation: fact note remember
relation: link relationship connection
node: entity
sequentialthinking: think reasoning step
echo: repeat
ping: reachable alive responsive
viewer: whoami
self: whoami
defined name: named_range named_ranges
sum: total
env: environment variables
gzip: compress zip
wiki: knowledge
heading: header title
paragraph: passage
protect document: lock password
unprotect document: unlock
page break: new_page
format: bold italic style font
format range: bold style
data validation: dropdown allowed_values
conditional format: highlight color
pivot table: summarise summarize pivot
goal seek: target solve
trace formula: precedents depends
sheet layout: freeze widen width
write range: cells
read range: cells
numbered list: bullet_list bullets
alternating row: stripes banded
merge: squash land combine
add: stage
organization: org
size: large big small
reaction: emoji
form response: answers submissions responses survey
form: survey questionnaire poll
drive access: share sharing editor viewer
shareable link: share_link
public access: publicly anyone
import to google doc: upload_doc
word: docx
excel: xlsx
"""


# How people abbreviate the products the catalogues' upstreams and servers are named after.
ALIASES_TEXT = """
kubernetes: k8s kube
devops: ado
postgres: postgresql psql pg
mongodb: mongo
elasticsearch: elastic
google calendar: gcal
google workspace: gsuite
github: gh
excel: xlsx xls
word: docx
aws: s3 ec2 lambda dynamodb iam cloudformation cloudwatch sqs sns ecs eks rds bedrock cloudfront route53
"""


PHRASAL_VERBS_TEXT = """
bring back: update restore reopen unarchive
give back: create refund
pay back: create refund
roll back: update rollback revert undo
spin up: create create start launch
hand over: update transfer assign
tuck away: delete archive
put away: delete archive
call off: delete cancel
check off: update complete close
tick off: update complete close
cross off: update complete close
wrap up: update complete close
take down: delete delete stop
tear down: delete delete
shut down: run stop
turn off: update disable stop mute
switch off: update disable stop mute
turn on: update enable start
switch on: update enable start
keep eye: create watch monitor subscribe
sign out: delete logout
log out: delete logout
"""
"""Phrasal verbs, the particle anywhere in the next few words ("bring the task back"): the operation
each asks for, then the words tools use for it. English, not tool vocabulary: a verb like ``bring``
or ``hand`` says nothing alone, and its particle (``back``) would otherwise match ``navigate_back``."""
