"""Drive the vc-mcp proxy with the official OpenAI or Anthropic Python SDK.

Reads JSON jobs on stdin, one a line, and for each writes one JSON line per
turn on stdout, then {"done": true}. One process serves many jobs: importing
an SDK is the slow part.

A turn's line:
{"turn": i, "text": answer text, "raw": base64 of the raw stream or null,
 "sent": [base64 of each request body the SDK sent]}.

Job fields: sdk ("openai" | "anthropic"), base_url, model, system,
history (messages before the turns), turns (user texts), stream (bool),
raw (bool: read the stream as bytes instead of through the SDK's parser),
max_tokens.
"""
import base64
import json
import sys

try:  # the SDKs' HTTP library (httpx2 in the pinned versions)
    import httpx2 as httpx
except ImportError:
    import httpx


def main():
    for line in sys.stdin:
        if line.strip():
            run(json.loads(line))
            print(json.dumps({"done": True}), flush=True)


def run(job):
    sent = []

    def on_request(request):
        sent.append(base64.b64encode(request.read()).decode())

    http_client = httpx.Client(event_hooks={"request": [on_request]}, timeout=60)
    messages = list(job.get("history", []))
    sdk = job["sdk"]
    if sdk == "openai":
        import openai

        client = openai.OpenAI(base_url=job["base_url"] + "/v1", api_key="sk-test-openai-key", http_client=http_client, max_retries=0)
        if job.get("system"):
            messages.insert(0, {"role": "system", "content": job["system"]})
    elif sdk == "anthropic":
        import anthropic

        client = anthropic.Anthropic(base_url=job["base_url"], api_key="sk-ant-test-key", http_client=http_client, max_retries=0)
    else:
        raise SystemExit("unknown sdk " + sdk)

    for i, user in enumerate(job["turns"]):
        sent.clear()
        messages.append({"role": "user", "content": user})
        try:
            text, raw = ask(client, sdk, job, messages)
        except Exception as e:  # an API error: report what the client saw
            status = getattr(e, "status_code", None)
            if status is None:
                raise
            print(json.dumps({"turn": i + 1, "status": status, "error": str(e), "sent": list(sent)}), flush=True)
            continue
        if text is not None:
            messages.append({"role": "assistant", "content": text})
        print(json.dumps({"turn": i + 1, "text": text, "raw": base64.b64encode(raw).decode() if raw is not None else None, "sent": list(sent)}), flush=True)


def ask(client, sdk, job, messages):
    """One request; returns (text, raw stream bytes)."""
    raw = None
    if sdk == "openai":
        args = dict(model=job["model"], messages=messages)
        if job.get("raw"):
            with client.chat.completions.with_streaming_response.create(stream=True, **args) as r:
                raw = b"".join(r.iter_bytes())
            text = None
        elif job.get("stream"):
            parts = []
            for chunk in client.chat.completions.create(stream=True, **args):
                if chunk.choices and chunk.choices[0].delta.content:
                    parts.append(chunk.choices[0].delta.content)
            text = "".join(parts)
        else:
            text = client.chat.completions.create(**args).choices[0].message.content
    else:
        args = dict(model=job["model"], max_tokens=job.get("max_tokens", 256), messages=messages)
        if job.get("system"):
            args["system"] = job["system"]
        if job.get("raw"):
            with client.messages.with_streaming_response.create(stream=True, **args) as r:
                raw = b"".join(r.iter_bytes())
            text = None
        elif job.get("stream"):
            with client.messages.stream(**args) as s:
                final = s.get_final_message()
            text = "".join(b.text for b in final.content if b.type == "text")
        else:
            msg = client.messages.create(**args)
            text = "".join(b.text for b in msg.content if b.type == "text")
    return text, raw


if __name__ == "__main__":
    main()
