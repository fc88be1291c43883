package tagging

import "strings"

// The word lists below are this package's own, written for vc-mcp. They are
// deliberately small: the tagger needs to know which words never name a
// topic, not a dictionary of those that do.

func set(words string) map[string]struct{} {
	f := strings.Fields(words)
	m := make(map[string]struct{}, len(f))
	for _, w := range f {
		m[w] = struct{}{}
	}
	return m
}

// functionWords never name a topic, even when capitalised: pronouns,
// determiners, auxiliaries, prepositions, conjunctions, question words.
var functionWords = set(`
a an the this that these those there here it its it's itself
i i'm i'd i'll i've me my mine myself we we're we'd we'll we've us our ours ourselves
you you're you'd you'll you've your yours yourself yourselves
he he's he'd he'll him his himself she she's she'd she'll her hers herself
they they're they'd they'll they've them their theirs themselves one ones
who whom whose which what what's whatever when where why how who's where's how's when's that's there's here's
is am are was were be been being isn't aren't wasn't weren't
do does did done doing don't doesn't didn't
have has had having haven't hasn't hadn't
will would shall should can could may might must won't wouldn't shouldn't can't cannot couldn't mightn't mustn't
and or but nor so yet if then else than because since unless while whereas although though
of in on at to from by with without within into onto upon over under about above below
across after before between among amongst amid through throughout during toward towards against along around
for as until till thru despite except beside besides behind beneath inside outside underneath instead otherwise
whether ago gonna wanna gotta ain't y'all ought
beyond near off out up down via per vs versus like unlike
not no nor yes yeah yep nope
all any some each every both either neither few many much more most less least own same such
other another else
also just only even still already again too very really quite rather pretty
e.g i.e etc eg ie
let's let
`)

// genericWords are content-looking words too vague to be a topic on their
// own: common verbs, adjectives, adverbs, vague nouns, chit-chat, time
// words. They are kept when capitalised mid-sentence (names like "Go").
// The list stays general on purpose (no small talk drawn from a benchmark):
// a word that is generic in one conversation ("chatting", "kindness", a
// speaker's name) is caught there by how it spreads over the sessions
// (memory's spreadTag), not listed here.
var genericWords = set(`
ok okay k kk alright hmm hm um uh oh ah wow lol haha hahaha omg btw fyi tbh imo imho
hi hello hey yo greetings bye goodbye cheers thanks thank thx ty welcome please pls sorry
sure great good cool nice awesome amazing perfect fine fantastic excellent wonderful lovely
interesting glad happy sad fun funny crazy weird true false right wrong correct exactly definitely
absolutely totally certainly indeed basically actually probably maybe perhaps possibly likely
anyway anyways though however well now then soon later today tonight tomorrow yesterday
currently recently lately finally eventually usually often sometimes always never ever once twice
quick quickly slow slowly fast easy easily hard simple simply new old big small large little
long short high low best better worse worst first last next previous early late earlier
main major minor whole full empty real certain sure own various several enough able
get gets got getting gotten make makes made making go goes went going gone come comes came coming
take takes took taking taken give gives gave giving given put puts putting keep keeps kept keeping
know knows knew knowing known think thinks thought thinking want wants wanted wanting
need needs needed needing like likes liked liking love loves loved see sees saw seen seeing
look looks looked looking seem seems seemed feel feels felt feeling try tries tried trying
use uses used using say says said saying tell tells told telling ask asks asked asking
mean means meant call calls called find finds found work works worked working help helps helped
sound sounds sounded hope hopes hoped guess guesses guessed wonder wondered suppose supposed
happen happens happened let lets check checks checked start starts started starting
stop stops stopped talk talks talked talking discuss discussed discussing mention mentioned
remember remembers remembered recall recalled forget forgot forgotten explain explained
show shows showed shown run runs ran change changed move moved set sets
do does did doing done be being been become became becoming
thing things stuff something anything everything nothing someone anyone everyone nobody
somebody anybody everybody somewhere anywhere everywhere nowhere way ways lot lots bit bits
kind kinds sort sorts type types part parts piece point points idea ideas question questions
answer answers problem problems issue issues case cases example examples fact facts reason
reasons place places people person guy guys folks man woman day days week weeks month months
year years time times moment moments minute minutes hour hours second seconds morning evening
afternoon night weekend weekends while end beginning start today's yesterday's
number numbers amount total rest side top bottom level levels area areas
monday tuesday wednesday thursday friday saturday sunday
january february march april june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec
one two three four five six seven eight nine ten hundred thousand million billion
mr mrs ms dr http https www com org net html
summarize summarise summary recap overview rundown everything
gear gears switching relief version versions missing return returns returned returning
mild severe huge tiny bad important possible available ready similar different specific general common usual
safe safer better cheaper faster slower bigger smaller easier harder worth unrelated meanwhile topic subject
`)

// greetings introduce a vocative name that is not a topic ("Hey Mel!").
var greetings = set(`wow oh aw aww omg yay cool nice great awesome congrats hi hey hello heya hiya yo thanks thank thx congrats congratulations dear bye goodbye cheers morning evening night welcome`)

// units make a preceding number salient ("16 GB", "200ms").
var units = set(`
gb mb kb tb pb gib mib kib tib gbps mbps kbps ghz mhz khz hz
ms ns us µs sec secs
km m cm mm mi miles mile kilometers kilometres meters metres ft feet inch inches
kg g lb lbs pounds ounces oz l ml liters litres gallons
% percent usd eur gbp jpy dollars dollar euros euro yen pounds bucks $ € ¥ £
rpm fps qps rps tps req cores core gpus cpus nodes replicas users
k x
`)

// monthNames maps month words to their number.
var monthNames = map[string]int{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3,
	"april": 4, "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7,
	"august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
	"october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

// weekdayNames maps weekday words to time.Weekday numbers.
var weekdayNames = map[string]int{
	"sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6,
}

// DefaultAliases are the aliases NewKeyword applies unless told otherwise:
// common abbreviations folded to the name people also use.
var DefaultAliases = map[string]string{
	"db":         "database",
	"dbs":        "database",
	"k8s":        "kubernetes",
	"postgresql": "postgres",
	"pg":         "postgres",
	"golang":     "go",
	"js":         "javascript",
	"ts":         "typescript",
	"py":         "python",
	"repo":       "repository",
	"repos":      "repository",
	"config":     "configuration",
	"auth":       "authentication",
	"ci-cd":      "ci",
	"mongo":      "mongodb",
}

// Word classes, as bits of lex.
const (
	fFunction uint16 = 1 << iota
	fGeneric
	fGreeting
	fUnit
	fMonth
	fWeekday
	fCue
	fNoise
	tBroad // may start an overview request
	tOrder // may start a first/last request
	tRule  // may start a standing instruction
	tWhen  // may start a question about time
	tShift // may announce a change of topic
	tDate  // may start a date expression
)

// lex maps every listed word to its classes: one lookup per token.
var lex = buildLex()

func buildLex() map[string]uint16 {
	m := make(map[string]uint16, 1024)
	mark := func(words map[string]struct{}, f uint16) {
		for w := range words {
			m[w] |= f
		}
	}
	markAll := func(words string, f uint16) { mark(set(words), f) }
	mark(functionWords, fFunction)
	mark(genericWords, fGeneric)
	mark(greetings, fGreeting)
	mark(units, fUnit)
	mark(cueWords, fCue)
	mark(termNoiseWords, fNoise)
	for w := range monthNames {
		m[w] |= fMonth | tDate
	}
	for w := range weekdayNames {
		m[w] |= fWeekday | tDate
	}
	markAll(`summarize summarise summary recap overview rundown roundup recapitulate tldr sum catch fill bring
		where go went remind everything all what`, tBroad)
	markAll(`originally initially earliest very at in from early to when first latest lately recently most just last`, tOrder)
	markAll(`from going in for henceforth don't dont do never always`, tRule)
	markAll(`when what which how since`, tWhen)
	markAll(`anyway anyways btw unrelated meanwhile by switching changing different another new`, tShift)
	markAll(`yesterday today tonight tomorrow the last this past previous next a an few several
		one two three four five six seven eight nine ten eleven twelve`, tDate)
	return m
}

func isFunction(w string) bool { return lex[w]&fFunction != 0 }
func isGeneric(w string) bool  { return lex[w]&fGeneric != 0 }
func isUnit(w string) bool     { return lex[w]&fUnit != 0 }
func isGreeting(w string) bool { return lex[w]&fGreeting != 0 }
func isCue(w string) bool      { return lex[w]&fCue != 0 }
func termNoise(w string) bool  { return lex[w]&fNoise != 0 }
