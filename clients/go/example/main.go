// Command example is the Go client's end-to-end check against a running Engram server: it creates
// a session, appends messages, lists them page by page, searches until the new conversation round
// is indexed (rounds are indexed asynchronously), builds a context for a new question and checks
// two error reasons, asserting on every answer. It prints one line per step and finally
// `engram_go: OK {json summary}` and exits 0, or `engram_go: FAIL <why>` and exits 1.
//
//	ENGRAM_ADDR=127.0.0.1:50051 ENGRAM_TOKEN=$(npm run -s token -- --user alice) OUT_DIR/bin/engram-go-example
//
// Environment: ENGRAM_ADDR (host:port, plaintext HTTP/2; an http:// prefix is dropped; default
// 127.0.0.1:50051), ENGRAM_TOKEN (bearer JWT, required), ENGRAM_DEADLINE (seconds per call,
// default 30).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"engram.local/go/engram"
	commonv1 "engram.local/go/gen/engram/common/v1"
	contextv1 "engram.local/go/gen/engram/context/v1"
	ingestionv1 "engram.local/go/gen/engram/ingestion/v1"
	retrievalv1 "engram.local/go/gen/engram/retrieval/v1"
)

// searchPolls bounds how often Search is repeated while the new round is not yet indexed, and
// searchPause is the wait between polls (indexing runs through an outbox after AppendMessages).
const (
	searchPolls = 40
	searchPause = 250 * time.Millisecond
)

// config is what the environment says.
type config struct {
	addr     string
	token    string
	deadline time.Duration
}

// summary is the JSON the OK line carries; the integration test asserts on it.
type summary struct {
	Session          string            `json:"session"`
	MessagesAppended int               `json:"messagesAppended"`
	MessagesListed   int               `json:"messagesListed"`
	ListPages        int               `json:"listPages"`
	SearchHits       int               `json:"searchHits"`
	SearchAttempts   int               `json:"searchAttempts"`
	RoundFound       string            `json:"roundFound"`
	ContextMessages  int               `json:"contextMessages"`
	ContextTokens    int32             `json:"contextTokens"`
	BudgetTokens     int32             `json:"budgetTokens"`
	Layers           map[string]int32  `json:"layers"`
	ErrorReasons     map[string]string `json:"errorReasons"`
}

// checkFailed is an answer that did not say what it should.
type checkFailed struct{ message string }

func (c checkFailed) Error() string { return c.message }

func check(ok bool, format string, args ...interface{}) {
	if !ok {
		panic(checkFailed{fmt.Sprintf(format, args...)})
	}
}

// must stops the run on a failed call, naming the call and the ErrorInfo reason.
func must(what string, err error) {
	if err != nil {
		panic(checkFailed{fmt.Sprintf("%s failed: %s", what, engram.Describe(err))})
	}
}

func readConfig() config {
	addr := strings.TrimSpace(os.Getenv("ENGRAM_ADDR"))
	if addr == "" {
		addr = "127.0.0.1:50051"
	}
	for _, prefix := range []string{"http://", "grpc://"} {
		addr = strings.TrimPrefix(addr, prefix)
	}
	token := strings.TrimSpace(os.Getenv("ENGRAM_TOKEN"))
	check(token != "", "ENGRAM_TOKEN is not set (mint one with `npm run -s token`)")
	seconds := 30.0
	if raw := os.Getenv("ENGRAM_DEADLINE"); raw != "" {
		parsed, err := strconv.ParseFloat(raw, 64)
		check(err == nil && parsed > 0, "ENGRAM_DEADLINE %q is not a positive number of seconds", raw)
		seconds = parsed
	}
	return config{addr: strings.TrimSuffix(addr, "/"), token: token, deadline: time.Duration(seconds * float64(time.Second))}
}

// runID makes this run's texts and request ids unique, so reruns against one server do not meet
// their own earlier data (or REQUEST_ID_REUSED).
func runID() string {
	var b [6]byte
	_, err := rand.Read(b[:])
	check(err == nil, "no randomness: %v", err)
	return hex.EncodeToString(b[:])
}

func main() {
	defer func() {
		if failure := recover(); failure != nil {
			if failed, ok := failure.(checkFailed); ok {
				fmt.Fprintf(os.Stderr, "engram_go: FAIL %s\n", failed.message)
				os.Exit(1)
			}
			panic(failure)
		}
	}()
	result := run(readConfig())
	line, err := json.Marshal(result)
	check(err == nil, "cannot encode the summary: %v", err)
	fmt.Printf("engram_go: OK %s\n", line)
}

func run(cfg config) summary {
	started := time.Now()
	step := func(name string) { fmt.Printf("[%6.2fs] %s\n", time.Since(started).Seconds(), name) }
	call := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), cfg.deadline)
	}
	id := runID()
	reasons := map[string]string{}

	dialCtx, cancelDial := call()
	anonymous, err := engram.Dial(dialCtx, cfg.addr, "")
	cancelDial()
	must("connecting to "+cfg.addr, err)
	defer anonymous.Close()
	dialCtx, cancelDial = call()
	client, err := engram.Dial(dialCtx, cfg.addr, cfg.token)
	cancelDial()
	must("connecting to "+cfg.addr, err)
	defer client.Close()

	step("CreateSession without a token is refused")
	ctx, cancel := call()
	_, err = anonymous.Ingestion.CreateSession(ctx, &ingestionv1.CreateSessionRequest{})
	cancel()
	check(status.Code(err) == codes.Unauthenticated && engram.Reason(err) == "TOKEN_MISSING",
		"expected UNAUTHENTICATED TOKEN_MISSING, got %v", describeOrOK(err))
	reasons["noToken"] = engram.Reason(err)

	step("CreateSession")
	ctx, cancel = call()
	created, err := client.Ingestion.CreateSession(ctx, &ingestionv1.CreateSessionRequest{
		Session: &ingestionv1.Session{DisplayName: "go example " + id, LanguageCode: "en"},
	})
	cancel()
	must("CreateSession", err)
	session := created.GetSession()
	check(strings.HasPrefix(session.GetName(), "sessions/"), "unexpected session name %q", session.GetName())

	step("AppendMessages")
	marker := "marigold" + id
	turns := []*ingestionv1.Message{
		{Role: ingestionv1.MessageRole_MESSAGE_ROLE_USER, Content: "We are choosing a venue for the Porto workshop; the booking code is " + marker + "."},
		{Role: ingestionv1.MessageRole_MESSAGE_ROLE_ASSISTANT, Content: "Noted the Porto booking code. How many people will attend?"},
		{Role: ingestionv1.MessageRole_MESSAGE_ROLE_USER, Content: "Nine people, and we need a projector in the room."},
	}
	ctx, cancel = call()
	appended, err := client.Ingestion.AppendMessages(ctx, &ingestionv1.AppendMessagesRequest{Parent: session.GetName(), Messages: turns})
	cancel()
	must("AppendMessages", err)
	check(len(appended.GetMessages()) == len(turns), "appended %d of %d messages", len(appended.GetMessages()), len(turns))
	for i, message := range appended.GetMessages() {
		check(message.GetContent() == turns[i].GetContent(), "message %d came back as %q", i, message.GetContent())
		check(i == 0 || message.GetSequence() > appended.GetMessages()[i-1].GetSequence(), "sequences are not increasing")
	}

	step("ListMessages, two per page")
	listed, pages := listMessages(client, call, session.GetName())
	check(len(listed) == len(turns), "listed %d messages, appended %d", len(listed), len(turns))
	for i, message := range listed {
		check(message.GetName() == appended.GetMessages()[i].GetName(), "listed message %d is %s, appended %s", i, message.GetName(), appended.GetMessages()[i].GetName())
	}
	check(pages == 2, "three messages at two per page took %d pages", pages)

	step("Search until the new round is indexed")
	hits, attempts, round := searchRound(client, call, session.GetName(), marker)

	step("BuildContext")
	question := "What was the booking code for the Porto workshop?"
	ctx, cancel = call()
	built, err := client.Context.BuildContext(ctx, &contextv1.BuildContextRequest{
		Session: session.GetName(), UserMessage: question, Model: "gpt-4o",
		Budget: &contextv1.TokenBudget{TotalTokens: 2000},
	})
	cancel()
	must("BuildContext", err)
	messages := built.GetMessages()
	check(len(messages) >= 2, "the context has %d messages", len(messages))
	last := messages[len(messages)-1]
	check(last.GetRole() == contextv1.ChatRole_CHAT_ROLE_USER && last.GetContent() == question, "the last message is not the user message: %q", last.GetContent())
	check(len(built.GetMessageTokens()) == len(messages), "message_tokens does not match messages")
	check(built.GetTotalTokens() > 0 && built.GetTotalTokens() <= built.GetBudgetTokens(), "%d tokens for a budget of %d", built.GetTotalTokens(), built.GetBudgetTokens())
	var rendered strings.Builder
	for _, message := range messages {
		rendered.WriteString(message.GetContent() + "\n")
	}
	check(strings.Contains(rendered.String(), "Nine people"), "the context lacks the session's recent turns")
	check(strings.Contains(rendered.String(), marker), "the context lacks the turn with the booking code")
	layers := map[string]int32{}
	for _, layer := range built.GetLayers() {
		layers[layer.GetLayer().String()] = layer.GetUsedTokens()
	}

	step("GetSession of a session that does not exist")
	ctx, cancel = call()
	_, err = client.Ingestion.GetSession(ctx, &ingestionv1.GetSessionRequest{Name: "sessions/01ARZ3NDEKTSV4RRFFQ69G5FAV"})
	cancel()
	check(status.Code(err) == codes.NotFound && engram.Reason(err) == "RESOURCE_NOT_FOUND", "expected NOT_FOUND RESOURCE_NOT_FOUND, got %v", describeOrOK(err))
	reasons["missingSession"] = engram.Reason(err)

	return summary{
		Session: session.GetName(), MessagesAppended: len(appended.GetMessages()), MessagesListed: len(listed), ListPages: pages,
		SearchHits: hits, SearchAttempts: attempts, RoundFound: round,
		ContextMessages: len(messages), ContextTokens: built.GetTotalTokens(), BudgetTokens: built.GetBudgetTokens(),
		Layers: layers, ErrorReasons: reasons,
	}
}

// listMessages reads a session's messages two per page, following next_page_token to the end
// (""), and returns them with the number of pages.
func listMessages(client *engram.Client, call func() (context.Context, context.CancelFunc), parent string) ([]*ingestionv1.Message, int) {
	var messages []*ingestionv1.Message
	token := ""
	for pages := 1; ; pages++ {
		check(pages <= 10, "ListMessages did not end after 10 pages")
		ctx, cancel := call()
		page, err := client.Ingestion.ListMessages(ctx, &ingestionv1.ListMessagesRequest{Parent: parent, PageSize: 2, PageToken: token})
		cancel()
		must("ListMessages", err)
		messages = append(messages, page.GetMessages()...)
		if token = page.GetNextPageToken(); token == "" {
			return messages, pages
		}
	}
}

// searchRound searches the session's rounds for the marker until a round whose text holds it
// comes back; the index is eventually consistent, so a fresh round can take a moment. It returns
// the hits of the successful search, the searches made and the round's name (its user message).
func searchRound(client *engram.Client, call func() (context.Context, context.CancelFunc), session, marker string) (int, int, string) {
	request := &retrievalv1.SearchRequest{
		Query:  "Porto workshop booking code " + marker,
		TopK:   5,
		Filter: &retrievalv1.SearchFilter{Sessions: []string{session}, Kinds: []commonv1.ItemKind{commonv1.ItemKind_ITEM_KIND_ROUND}},
	}
	for attempt := 1; attempt <= searchPolls; attempt++ {
		ctx, cancel := call()
		found, err := client.Retrieval.Search(ctx, request)
		cancel()
		must("Search", err)
		for _, result := range found.GetResults() {
			if round := result.GetRound(); round != nil && strings.Contains(round.GetText(), marker) {
				check(round.GetSession() == session, "the round belongs to %s, not %s", round.GetSession(), session)
				check(result.GetName() == round.GetUserMessage(), "a round's result name %s is not its user message %s", result.GetName(), round.GetUserMessage())
				return len(found.GetResults()), attempt, result.GetName()
			}
		}
		time.Sleep(searchPause)
	}
	panic(checkFailed{fmt.Sprintf("Search did not find the new round within %d searches", searchPolls)})
}

// describeOrOK renders an error, or says the call unexpectedly succeeded.
func describeOrOK(err error) string {
	if err == nil {
		return "success"
	}
	return engram.Describe(err)
}
