package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/vc-mcp/vc-mcp/memory"
)

// The chat screen: the conversation (or the turn inspector) on the left;
// the tag panel, the budget bar and the turn list on the right; the input
// and a status line at the bottom.

const sidebarWidth = 40

var (
	styleTitle    = lipgloss.NewStyle().Bold(true)
	styleDim      = lipgloss.NewStyle().Faint(true)
	styleUser     = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))
	styleModel    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("10"))
	styleSelected = lipgloss.NewStyle().Reverse(true)
	styleError    = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	stylePanel    = lipgloss.NewStyle().Border(lipgloss.NormalBorder()).Padding(0, 1)
)

// Messages from the chat's background work.
type (
	turnDoneMsg struct {
		turn   chatTurn
		tags   []memory.TagStatus
		active int
		err    error
	}
	compactDoneMsg struct {
		ev     compactionEvent
		tags   []memory.TagStatus
		active int
		err    error
	}
)

type chatApp struct {
	ctx  context.Context
	deps chatDeps

	session  chatSession
	tags     []memory.TagStatus
	active   int
	selected int // index into session.Turns; -1 = none
	inspect  bool
	busy     string // what is running, "" when idle
	pending  string // the message being answered
	status   string
	errMsg   string

	width, height int
	input         textinput.Model
	view          viewport.Model
	spin          spinner.Model
}

func newChatApp(ctx context.Context, deps chatDeps) *chatApp {
	in := textinput.New()
	in.Placeholder = "message, or /compact, /export FILE, /quit"
	in.Prompt = "> "
	in.CharLimit = 0
	in.Focus()
	a := &chatApp{
		ctx: ctx, deps: deps, selected: -1, input: in,
		view: viewport.New(80, 20), spin: spinner.New(spinner.WithSpinner(spinner.MiniDot)),
		session: chatSession{Format: chatSessionFormat, Version: 1, Conversation: deps.pipeline.conv,
			Model: deps.llm.Label(), Budget: deps.pipeline.budget, Turns: []chatTurn{}, Events: []chatEvent{}},
		status: "Type a message. Ctrl+B/Ctrl+F select a turn, Tab inspects it, /quit leaves.",
	}
	a.tags, a.active, _ = deps.topics(ctx)
	return a
}

func (a *chatApp) Init() tea.Cmd { return textinput.Blink }

func (a *chatApp) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		a.width, a.height = msg.Width, msg.Height
		a.layout()
		return a, nil
	case spinner.TickMsg:
		if a.busy == "" {
			return a, nil
		}
		var cmd tea.Cmd
		a.spin, cmd = a.spin.Update(msg)
		return a, cmd
	case turnDoneMsg:
		a.busy, a.pending = "", ""
		if msg.err != nil {
			a.errMsg = "error: " + msg.err.Error()
			a.refresh()
			return a, nil
		}
		a.session.Turns = append(a.session.Turns, msg.turn)
		a.tags, a.active = msg.tags, msg.active
		a.selected = len(a.session.Turns) - 1
		a.status = fmt.Sprintf("turn %d stored; tags %s", len(a.session.Turns), strings.Join(msg.turn.Report.Tags, ", "))
		if c := msg.turn.Report.Compaction; c != nil {
			a.status += fmt.Sprintf("; compacted %d segments, freed %d tokens", c.Segments, c.TokensFreed)
		}
		a.refresh()
		return a, nil
	case compactDoneMsg:
		a.busy = ""
		if msg.err != nil {
			a.errMsg = "compact: " + msg.err.Error()
			a.refresh()
			return a, nil
		}
		a.tags, a.active = msg.tags, msg.active
		if msg.ev.Segments == 0 {
			a.status = "compact: nothing to compact (recent turns are protected)"
		} else {
			a.session.Events = append(a.session.Events, chatEvent{AfterTurn: len(a.session.Turns), Kind: "compact",
				Segments: msg.ev.Segments, TokensFreed: msg.ev.TokensFreed})
			a.status = fmt.Sprintf("compacted %d segments, freed %d tokens", msg.ev.Segments, msg.ev.TokensFreed)
		}
		a.refresh()
		return a, nil
	case tea.KeyMsg:
		return a.key(msg)
	}
	return a, nil
}

func (a *chatApp) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch k.Type {
	case tea.KeyCtrlC:
		return a, tea.Quit
	case tea.KeyCtrlB:
		if a.selected > 0 {
			a.selected--
		}
		a.refresh()
		return a, nil
	case tea.KeyCtrlF:
		if a.selected < len(a.session.Turns)-1 {
			a.selected++
		}
		a.refresh()
		return a, nil
	case tea.KeyTab:
		a.inspect = !a.inspect
		a.refresh()
		if !a.inspect {
			a.view.GotoBottom()
		}
		return a, nil
	case tea.KeyPgUp:
		a.view.PageUp()
		return a, nil
	case tea.KeyPgDown:
		a.view.PageDown()
		return a, nil
	case tea.KeyEnter:
		return a.submit()
	}
	var cmd tea.Cmd
	a.input, cmd = a.input.Update(k)
	return a, cmd
}

// submit handles the input line: a command or a message.
func (a *chatApp) submit() (tea.Model, tea.Cmd) {
	text := strings.TrimSpace(a.input.Value())
	if text == "" {
		return a, nil
	}
	a.errMsg = ""
	if a.busy != "" && text != "/quit" {
		a.status = "wait: " + a.busy
		return a, nil
	}
	a.input.Reset()
	if strings.HasPrefix(text, "/") {
		cmd, arg, _ := strings.Cut(text, " ")
		arg = strings.TrimSpace(arg)
		switch cmd {
		case "/quit", "/exit":
			return a, tea.Quit
		case "/export":
			if arg == "" {
				arg = "vc-session.json"
			}
			if err := exportSession(arg, a.session); err != nil {
				a.errMsg = "export: " + err.Error()
			} else {
				a.status = fmt.Sprintf("exported %d turns to %s", len(a.session.Turns), arg)
			}
			a.refresh()
			return a, nil
		case "/compact":
			if len(a.session.Turns) == 0 {
				a.status = "compact: nothing stored in this session yet"
				a.refresh()
				return a, nil
			}
			a.busy = "compacting"
			n, last := len(a.session.Turns), a.session.Turns[len(a.session.Turns)-1]
			deps, ctx := a.deps, a.ctx
			a.refresh()
			return a, tea.Batch(a.spin.Tick, func() tea.Msg {
				ev, err := deps.compact(ctx, n, last)
				m := compactDoneMsg{ev: ev, err: err}
				if err == nil {
					m.tags, m.active, m.err = deps.topics(ctx)
				}
				return m
			})
		default:
			a.errMsg = fmt.Sprintf("unknown command %s: try /compact, /export FILE or /quit", cmd)
			a.refresh()
			return a, nil
		}
	}
	a.busy, a.pending = "waiting for "+a.deps.llm.Label(), text
	n := len(a.session.Turns) + 1
	past := append([]chatTurn(nil), a.session.Turns...)
	deps, ctx := a.deps, a.ctx
	a.refresh()
	return a, tea.Batch(a.spin.Tick, func() tea.Msg {
		turn, err := deps.exchange(ctx, n, text, past)
		m := turnDoneMsg{turn: turn, err: err}
		if err == nil {
			m.tags, m.active, m.err = deps.topics(ctx)
		}
		return m
	})
}

// layout sizes the parts to the window.
func (a *chatApp) layout() {
	a.view.Width = max(20, a.width-sidebarWidth-1)
	a.view.Height = max(3, a.height-4)
	a.input.Width = max(10, a.width-4)
	a.refresh()
}

// refresh renders the left pane's content: the conversation, or the
// selected turn in the inspector.
func (a *chatApp) refresh() {
	w := a.view.Width
	wrap := lipgloss.NewStyle().Width(w)
	var b strings.Builder
	if a.inspect {
		b.WriteString(a.inspector(w))
		a.view.SetContent(wrap.Render(b.String()))
		a.view.GotoTop()
		return
	}
	for i, t := range a.session.Turns {
		mark := " "
		if i == a.selected {
			mark = "▌"
		}
		fmt.Fprintf(&b, "%s%s %s\n", mark, styleUser.Render("you:"), t.User)
		fmt.Fprintf(&b, "%s%s %s\n\n", mark, styleModel.Render("model:"), t.Assistant)
	}
	if a.pending != "" {
		fmt.Fprintf(&b, " %s %s\n %s\n", styleUser.Render("you:"), a.pending, styleDim.Render("…"))
	}
	if len(a.session.Turns) == 0 && a.pending == "" {
		b.WriteString(styleDim.Render("Memory recalls context for each message; the model answers with it; the exchange is stored."))
	}
	a.view.SetContent(wrap.Render(b.String()))
	a.view.GotoBottom()
}

// inspector describes the selected turn: what memory did for it.
func (a *chatApp) inspector(w int) string {
	if a.selected < 0 || a.selected >= len(a.session.Turns) {
		return "Turn inspector: no turn yet. Tab closes it."
	}
	t := a.session.Turns[a.selected]
	r := t.Report
	var b strings.Builder
	fmt.Fprintf(&b, "%s (Tab closes, Ctrl+B/Ctrl+F other turns, PgUp/PgDn scroll)\n\n", styleTitle.Render(fmt.Sprintf("Turn %d inspector", a.selected+1)))
	fmt.Fprintf(&b, "message: %s\n", t.User)
	if r == nil {
		return b.String()
	}
	fmt.Fprintf(&b, "stored as: %s   tags: %s\n", strings.Join(r.Stored.TurnIDs, ", "), strings.Join(r.Tags, ", "))
	fmt.Fprintf(&b, "query tags: %s   broad: %v   temporal: %v\n", orNone(r.MatchedTags), r.Broad, r.Temporal)
	fmt.Fprintf(&b, "signals: %s\n", orNone(r.Signals))
	fmt.Fprintf(&b, "tokens: message %d, answer %d, context %d of %d (turns %d, summaries %d, headers %d, topic hint %d), active %d\n",
		r.Tokens.Message, r.Tokens.Answer, r.Tokens.Context, r.Tokens.Budget,
		r.Breakdown.Turns, r.Breakdown.Summaries, r.Breakdown.Headers, r.Breakdown.TopicHint, r.Tokens.Active)
	if r.Timings != nil {
		fmt.Fprintf(&b, "timings: recall %.1f ms, answer %.1f ms, store %.1f ms\n", r.Timings.RecallMS, r.Timings.AnswerMS, r.Timings.StoreMS)
	}
	if r.Compaction != nil {
		fmt.Fprintf(&b, "compaction: %d segments, %d tokens freed\n", r.Compaction.Segments, r.Compaction.TokensFreed)
	}
	fmt.Fprintf(&b, "recalled turns: %s\n", orNone(r.Chosen.TurnIDs))
	var sums []string
	for _, s := range r.Chosen.Summaries {
		sums = append(sums, fmt.Sprintf("%s %s (%s, %dt)", s.Kind, s.ID, s.Tag, s.Tokens))
	}
	fmt.Fprintf(&b, "recalled summaries: %s\n\n", orNone(sums))
	b.WriteString(styleTitle.Render("assembled context") + "\n")
	b.WriteString(r.Context)
	return b.String()
}

func (a *chatApp) View() string {
	if a.width == 0 {
		return "starting…"
	}
	header := styleTitle.Render("vc-mcp chat") + styleDim.Render(fmt.Sprintf("  %s · conversation %s · %d turns",
		a.deps.llm.Label(), a.deps.pipeline.conv, len(a.session.Turns)))
	left := lipgloss.NewStyle().Width(a.view.Width).Height(a.view.Height).Render(a.view.View())
	right := a.sidebar(a.view.Height)
	body := lipgloss.JoinHorizontal(lipgloss.Top, left, " ", right)
	status := a.status
	if a.busy != "" {
		status = a.spin.View() + " " + a.busy
	}
	if a.errMsg != "" {
		status = styleError.Render(a.errMsg)
	}
	status = lipgloss.NewStyle().MaxWidth(a.width).Render(status)
	return lipgloss.JoinVertical(lipgloss.Left, header, body, a.input.View(), status)
}

// sidebar is the tag panel, the budget bar and the turn list.
func (a *chatApp) sidebar(height int) string {
	inner := sidebarWidth - 4
	var tags strings.Builder
	tags.WriteString(styleTitle.Render("Topics") + "\n")
	if len(a.tags) == 0 {
		tags.WriteString(styleDim.Render("none yet"))
	}
	for i, t := range a.tags {
		if i == 6 {
			fmt.Fprintf(&tags, styleDim.Render("+%d more"), len(a.tags)-6)
			break
		}
		depth := ""
		if t.Depth != "" && t.Depth != memory.DepthNone {
			depth = " " + string(t.Depth)
		}
		line := fmt.Sprintf("%-*s %3dt%s", inner-12, clipText(t.Tag, inner-12), t.Turns, depth)
		tags.WriteString(clipText(line, inner) + "\n")
	}

	var budget strings.Builder
	budget.WriteString(styleTitle.Render("Budget") + "\n")
	if r := a.selectedReport(); r != nil {
		budget.WriteString(bar(inner, r.Tokens.Budget, r.Breakdown.Turns, r.Breakdown.Summaries, r.Breakdown.Headers+r.Breakdown.TopicHint) + "\n")
		fmt.Fprintf(&budget, "context %d/%d\n", r.Tokens.Context, r.Tokens.Budget)
		budget.WriteString(styleDim.Render(fmt.Sprintf("█ turns %d ▓ sums %d ▒ hdr %d", r.Breakdown.Turns, r.Breakdown.Summaries, r.Breakdown.Headers+r.Breakdown.TopicHint)) + "\n")
	} else {
		budget.WriteString(bar(inner, a.deps.pipeline.budget, 0, 0, 0) + "\n")
	}
	soft := int(float64(a.deps.window) * a.deps.soft)
	fmt.Fprintf(&budget, "active %d / compact at %d", a.active, soft)

	var turns strings.Builder
	turns.WriteString(styleTitle.Render("Turns") + "\n")
	listRows := max(1, height-lipgloss.Height(tags.String())-lipgloss.Height(budget.String())-8)
	first := max(0, len(a.session.Turns)-listRows)
	if a.selected >= 0 && a.selected < first {
		first = a.selected
	}
	for i := first; i < len(a.session.Turns) && i < first+listRows; i++ {
		t := a.session.Turns[i]
		tagList := ""
		if t.Report != nil {
			tagList = strings.Join(t.Report.Tags, ",")
		}
		line := clipText(fmt.Sprintf("#%d [%s]", i+1, tagList), inner)
		if i == a.selected {
			line = styleSelected.Render(line)
		}
		turns.WriteString(line + "\n")
	}
	if len(a.session.Turns) == 0 {
		turns.WriteString(styleDim.Render("none yet"))
	}
	panel := stylePanel.Width(sidebarWidth - 2)
	return lipgloss.JoinVertical(lipgloss.Left,
		panel.Render(strings.TrimRight(tags.String(), "\n")),
		panel.Render(strings.TrimRight(budget.String(), "\n")),
		panel.Render(strings.TrimRight(turns.String(), "\n")))
}

func (a *chatApp) selectedReport() *turnReport {
	if a.selected < 0 || a.selected >= len(a.session.Turns) {
		return nil
	}
	return a.session.Turns[a.selected].Report
}

// bar draws a budget of total tokens split into parts, each with its own
// shade, in width cells.
func bar(width, total int, parts ...int) string {
	if total <= 0 {
		return strings.Repeat("░", width)
	}
	shades := []string{"█", "▓", "▒"}
	var b strings.Builder
	used := 0
	for i, p := range parts {
		cells := p * width / total
		if cells == 0 && p > 0 {
			cells = 1 // a part in use shows, however small
		}
		if used+cells > width {
			cells = width - used
		}
		b.WriteString(strings.Repeat(shades[i%len(shades)], cells))
		used += cells
	}
	b.WriteString(strings.Repeat("░", width-used))
	return b.String()
}

// clipText cuts s to n cells with an ellipsis.
func clipText(s string, n int) string {
	if n <= 1 || lipgloss.Width(s) <= n {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && lipgloss.Width(string(r))+1 > n {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}
