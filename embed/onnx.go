package embed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file reads the weights of a BERT encoder out of an ONNX export
// (ModelProto -> GraphProto -> initializers and Constant nodes), parsed with
// protowire: no generated code, only the handful of fields below.
//
// Exports name the embeddings, biases and LayerNorm parameters after the
// PyTorch module, but torch.onnx stores every Linear weight as an anonymous
// MatMul operand ("onnx::MatMul_787") laid out [in, out]. Those are named
// by walking the graph: MatMul(x, W) feeds Add(., B) and B is called
// "<module>.bias", so W is "<module>.weight", transposed to PyTorch's
// [out, in]. The same walk recovers what config.json would say: the number
// of attention heads from the Reshape that splits them, the activation
// from Erf/Tanh/Relu, LayerNorm's epsilon from the constant added before
// Sqrt.

// ONNX field numbers (onnx.proto3).
const (
	modelGraph = 7

	graphNode        = 1
	graphInitializer = 5

	nodeInput     = 1
	nodeOutput    = 2
	nodeOpType    = 4
	nodeAttribute = 5

	attrName = 1
	attrF    = 2
	attrI    = 3
	attrT    = 5

	tensorDims         = 1
	tensorDataType     = 2
	tensorFloatData    = 4
	tensorInt32Data    = 5
	tensorInt64Data    = 7
	tensorName         = 8
	tensorRawData      = 9
	tensorDoubleData   = 10
	tensorDataLocation = 14

	onnxFloat   = 1
	onnxInt32   = 6
	onnxInt64   = 7
	onnxFloat16 = 10
	onnxDouble  = 11
)

type onnxTensor struct {
	name     string
	dims     []int64
	dtype    int
	raw      []byte
	floats   []float32
	ints     []int64
	doubles  []float64
	external bool
}

func (t *onnxTensor) size() int64 {
	n := int64(1)
	for _, d := range t.dims {
		n *= d
	}
	return n
}

// float32s decodes a floating-point tensor.
func (t *onnxTensor) float32s() ([]float32, error) {
	if t.external {
		return nil, fmt.Errorf("tensor %s is stored in an external data file; re-export the model with its weights inside the .onnx file", t.name)
	}
	n := t.size()
	if n < 0 || n > 1<<31 {
		return nil, fmt.Errorf("tensor %s has an impossible shape %v", t.name, t.dims)
	}
	switch t.dtype {
	case onnxFloat:
		if t.raw != nil {
			if int64(len(t.raw)) != 4*n {
				return nil, fmt.Errorf("tensor %s: %d raw bytes for %d floats", t.name, len(t.raw), n)
			}
			v := make([]float32, n)
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.raw[4*i:]))
			}
			return v, nil
		}
		if int64(len(t.floats)) != n {
			return nil, fmt.Errorf("tensor %s: %d float_data values for %d elements", t.name, len(t.floats), n)
		}
		return t.floats, nil
	case onnxFloat16:
		if t.raw != nil {
			if int64(len(t.raw)) != 2*n {
				return nil, fmt.Errorf("tensor %s: %d raw bytes for %d halves", t.name, len(t.raw), n)
			}
			v := make([]float32, n)
			for i := range v {
				v[i] = f16to32(binary.LittleEndian.Uint16(t.raw[2*i:]))
			}
			return v, nil
		}
		// float16 without raw_data travels in int32_data, one per value.
		if int64(len(t.ints)) != n {
			return nil, fmt.Errorf("tensor %s: %d values for %d elements", t.name, len(t.ints), n)
		}
		v := make([]float32, n)
		for i, x := range t.ints {
			v[i] = f16to32(uint16(x))
		}
		return v, nil
	case onnxDouble:
		if t.raw != nil {
			if int64(len(t.raw)) != 8*n {
				return nil, fmt.Errorf("tensor %s: %d raw bytes for %d doubles", t.name, len(t.raw), n)
			}
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(t.raw[8*i:])))
			}
			return v, nil
		}
		if int64(len(t.doubles)) != n {
			return nil, fmt.Errorf("tensor %s: %d double_data values for %d elements", t.name, len(t.doubles), n)
		}
		v := make([]float32, n)
		for i, x := range t.doubles {
			v[i] = float32(x)
		}
		return v, nil
	}
	return nil, fmt.Errorf("tensor %s has data type %d, not a float type", t.name, t.dtype)
}

// int64s decodes an integer tensor (for shape constants).
func (t *onnxTensor) int64s() ([]int64, bool) {
	switch t.dtype {
	case onnxInt64:
		if t.raw != nil {
			if len(t.raw)%8 != 0 {
				return nil, false
			}
			v := make([]int64, len(t.raw)/8)
			for i := range v {
				v[i] = int64(binary.LittleEndian.Uint64(t.raw[8*i:]))
			}
			return v, true
		}
		return t.ints, true
	case onnxInt32:
		if t.raw != nil {
			if len(t.raw)%4 != 0 {
				return nil, false
			}
			v := make([]int64, len(t.raw)/4)
			for i := range v {
				v[i] = int64(int32(binary.LittleEndian.Uint32(t.raw[4*i:])))
			}
			return v, true
		}
		return t.ints, true
	}
	return nil, false
}

type onnxAttr struct {
	name string
	f    float32
	i    int64
	t    *onnxTensor
}

type onnxNode struct {
	op      string
	inputs  []string
	outputs []string
	attrs   []onnxAttr
}

func (n *onnxNode) attr(name string) *onnxAttr {
	for i := range n.attrs {
		if n.attrs[i].name == name {
			return &n.attrs[i]
		}
	}
	return nil
}

type onnxGraph struct {
	nodes []onnxNode
	inits map[string]*onnxTensor
	order []string // initializer names in file order
	// consts are the outputs of Constant nodes.
	consts map[string]*onnxTensor
	// producer and consumers index the nodes by the values they touch.
	producer  map[string]*onnxNode
	consumers map[string][]*onnxNode
}

// fields walks the protobuf fields of b, calling fn for each.
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var u uint32
			u, n = protowire.ConsumeFixed32(b)
			x = uint64(u)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

// packedVarints appends a repeated varint field that may be packed (bytes)
// or not (one value per tag).
func packedVarints(dst []int64, typ protowire.Type, v []byte, x uint64) ([]int64, error) {
	if typ != protowire.BytesType {
		return append(dst, int64(x)), nil
	}
	for len(v) > 0 {
		u, n := protowire.ConsumeVarint(v)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		dst = append(dst, int64(u))
		v = v[n:]
	}
	return dst, nil
}

func parseTensor(b []byte) (*onnxTensor, error) {
	t := &onnxTensor{}
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		var err error
		switch num {
		case tensorDims:
			t.dims, err = packedVarints(t.dims, typ, v, x)
		case tensorDataType:
			t.dtype = int(x)
		case tensorName:
			t.name = string(v)
		case tensorRawData:
			t.raw = v
			if t.raw == nil {
				t.raw = []byte{}
			}
		case tensorInt32Data, tensorInt64Data:
			var vals []int64
			vals, err = packedVarints(nil, typ, v, x)
			if num == tensorInt32Data {
				for i := range vals {
					vals[i] = int64(int32(vals[i]))
				}
			}
			t.ints = append(t.ints, vals...)
		case tensorFloatData:
			if typ == protowire.Fixed32Type {
				t.floats = append(t.floats, math.Float32frombits(uint32(x)))
			} else if typ == protowire.BytesType {
				if len(v)%4 != 0 {
					return fmt.Errorf("float_data of %d bytes", len(v))
				}
				for i := 0; i < len(v); i += 4 {
					t.floats = append(t.floats, math.Float32frombits(binary.LittleEndian.Uint32(v[i:])))
				}
			}
		case tensorDoubleData:
			if typ == protowire.Fixed64Type {
				t.doubles = append(t.doubles, math.Float64frombits(x))
			} else if typ == protowire.BytesType {
				if len(v)%8 != 0 {
					return fmt.Errorf("double_data of %d bytes", len(v))
				}
				for i := 0; i < len(v); i += 8 {
					t.doubles = append(t.doubles, math.Float64frombits(binary.LittleEndian.Uint64(v[i:])))
				}
			}
		case tensorDataLocation:
			t.external = x == 1
		}
		return err
	})
	return t, err
}

func parseNode(b []byte) (onnxNode, error) {
	var n onnxNode
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch num {
		case nodeInput:
			n.inputs = append(n.inputs, string(v))
		case nodeOutput:
			n.outputs = append(n.outputs, string(v))
		case nodeOpType:
			n.op = string(v)
		case nodeAttribute:
			var a onnxAttr
			err := fields(v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
				switch num {
				case attrName:
					a.name = string(v)
				case attrF:
					a.f = math.Float32frombits(uint32(x))
				case attrI:
					a.i = int64(x)
				case attrT:
					t, err := parseTensor(v)
					if err != nil {
						return err
					}
					a.t = t
				}
				return nil
			})
			if err != nil {
				return err
			}
			n.attrs = append(n.attrs, a)
		}
		return nil
	})
	return n, err
}

// parseONNX reads the graph of an ONNX model held in b. The tensors keep
// pointing into b.
func parseONNX(b []byte) (*onnxGraph, error) {
	g := &onnxGraph{inits: map[string]*onnxTensor{}, consts: map[string]*onnxTensor{},
		producer: map[string]*onnxNode{}, consumers: map[string][]*onnxNode{}}
	var graph []byte
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		if num == modelGraph && typ == protowire.BytesType {
			graph = v
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("not an ONNX model: %w", err)
	}
	if graph == nil {
		return nil, errors.New("not an ONNX model: no graph")
	}
	err = fields(graph, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch num {
		case graphNode:
			n, err := parseNode(v)
			if err != nil {
				return fmt.Errorf("node: %w", err)
			}
			g.nodes = append(g.nodes, n)
		case graphInitializer:
			t, err := parseTensor(v)
			if err != nil {
				return fmt.Errorf("initializer: %w", err)
			}
			if _, dup := g.inits[t.name]; !dup {
				g.order = append(g.order, t.name)
			}
			g.inits[t.name] = t
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ONNX graph: %w", err)
	}
	for i := range g.nodes {
		n := &g.nodes[i]
		for _, o := range n.outputs {
			g.producer[o] = n
		}
		for _, in := range n.inputs {
			g.consumers[in] = append(g.consumers[in], n)
		}
		if n.op == "Constant" && len(n.outputs) == 1 {
			if a := n.attr("value"); a != nil && a.t != nil {
				g.consts[n.outputs[0]] = a.t
			}
		}
	}
	return g, nil
}

// constant returns the tensor behind a value: an initializer, a Constant
// node's output, or either seen through Unsqueeze/Cast/Identity.
func (g *onnxGraph) constant(name string) *onnxTensor {
	for range 8 {
		if t := g.inits[name]; t != nil {
			return t
		}
		if t := g.consts[name]; t != nil {
			return t
		}
		p := g.producer[name]
		if p == nil || len(p.inputs) == 0 {
			return nil
		}
		switch p.op {
		case "Unsqueeze", "Cast", "Identity", "Squeeze":
			name = p.inputs[0]
		default:
			return nil
		}
	}
	return nil
}

var layerRe = regexp.MustCompile(`^encoder\.layer\.(\d+)\.`)

// bertTensors maps the graph's weights onto BertModel's parameter names and
// infers the configuration.
func (g *onnxGraph) bertTensors() (tensors, bertConfig, error) {
	ts := make(tensors)
	for _, name := range g.order {
		t := g.inits[name]
		if t.dtype != onnxFloat && t.dtype != onnxFloat16 && t.dtype != onnxDouble {
			continue
		}
		cn := canonicalName(name)
		if strings.HasPrefix(cn, "onnx::") {
			continue // named below, from the graph
		}
		v, err := t.float32s()
		if err != nil {
			return nil, bertConfig{}, err
		}
		ts[cn] = v
	}
	// Linear layers: MatMul(x, W) [+ Add(., B)] and Gemm(x, W, B).
	for i := range g.nodes {
		n := &g.nodes[i]
		var w *onnxTensor
		var bias string
		transposed := false // W laid out [out, in] already
		switch n.op {
		case "MatMul":
			if len(n.inputs) != 2 || len(n.outputs) != 1 {
				continue
			}
			if w = g.inits[n.inputs[1]]; w == nil {
				continue
			}
			for _, c := range g.consumers[n.outputs[0]] {
				if c.op != "Add" || len(c.inputs) != 2 {
					continue
				}
				other := c.inputs[0]
				if other == n.outputs[0] {
					other = c.inputs[1]
				}
				if b := g.inits[other]; b != nil {
					bias = canonicalName(other)
				}
			}
		case "Gemm":
			if len(n.inputs) < 3 {
				continue
			}
			if w = g.inits[n.inputs[1]]; w == nil || g.inits[n.inputs[2]] == nil {
				continue
			}
			bias = canonicalName(n.inputs[2])
			if a := n.attr("transB"); a != nil && a.i == 1 {
				transposed = true
			}
		default:
			continue
		}
		if !strings.HasSuffix(bias, ".bias") || len(w.dims) != 2 {
			continue
		}
		name := strings.TrimSuffix(bias, "bias") + "weight"
		v, err := w.float32s()
		if err != nil {
			return nil, bertConfig{}, err
		}
		rows, cols := int(w.dims[0]), int(w.dims[1])
		if !transposed { // [in, out] -> [out, in]
			t := make([]float32, len(v))
			for r := 0; r < rows; r++ {
				for c := 0; c < cols; c++ {
					t[c*rows+r] = v[r*cols+c]
				}
			}
			v = t
		}
		ts[name] = v
	}
	cfg, err := g.inferConfig(ts)
	return ts, cfg, err
}

// inferConfig works out config.json from the tensors and the graph.
func (g *onnxGraph) inferConfig(ts tensors) (bertConfig, error) {
	c := bertConfig{ModelType: "bert", PositionEmbeddingType: "absolute", LayerNormEps: 1e-12, HiddenAct: "gelu"}
	w := g.initShape("embeddings.word_embeddings.weight")
	p := g.initShape("embeddings.position_embeddings.weight")
	tt := g.initShape("embeddings.token_type_embeddings.weight")
	if len(w) != 2 || len(p) != 2 || len(tt) != 2 {
		return c, errors.New("the graph has no BERT embeddings (embeddings.word_embeddings.weight, position_embeddings, token_type_embeddings)")
	}
	c.VocabSize, c.HiddenSize = int(w[0]), int(w[1])
	c.MaxPositionEmbeddings, c.TypeVocabSize = int(p[0]), int(tt[0])
	for name := range ts {
		if m := layerRe.FindStringSubmatch(name); m != nil {
			i, _ := strconv.Atoi(m[1])
			c.NumHiddenLayers = max(c.NumHiddenLayers, i+1)
		}
	}
	c.IntermediateSize = len(ts["encoder.layer.0.intermediate.dense.bias"])
	ops := map[string]bool{}
	for i := range g.nodes {
		n := &g.nodes[i]
		ops[n.op] = true
		switch n.op {
		case "Sqrt":
			// LayerNorm: Sqrt(Add(variance, eps)).
			if len(n.inputs) == 0 {
				continue
			}
			if a := g.producer[n.inputs[0]]; a != nil && a.op == "Add" && len(a.inputs) == 2 {
				for _, in := range a.inputs {
					if t := g.constant(in); t != nil && t.size() == 1 {
						if v, err := t.float32s(); err == nil && v[0] > 0 && v[0] < 1e-3 {
							c.LayerNormEps = float64(v[0])
						}
					}
				}
			}
		case "LayerNormalization":
			if a := n.attr("epsilon"); a != nil && a.f > 0 {
				c.LayerNormEps = float64(a.f)
			}
		case "Reshape":
			if h := g.headsOf(n, c.HiddenSize); h > 0 && c.NumAttentionHeads == 0 {
				c.NumAttentionHeads = h
			}
		}
	}
	switch {
	case ops["Erf"]:
		c.HiddenAct = "gelu"
	case ops["Tanh"]:
		c.HiddenAct = "gelu_new"
	case ops["Relu"]:
		c.HiddenAct = "relu"
	}
	if c.NumAttentionHeads == 0 {
		return c, errors.New("cannot tell the number of attention heads from the graph: pass the model's config.json")
	}
	// float32 rounding of 1e-12 in the graph: keep the decimal the config had.
	if math.Abs(c.LayerNormEps-1e-12)/1e-12 < 1e-6 {
		c.LayerNormEps = 1e-12
	} else if math.Abs(c.LayerNormEps-1e-5)/1e-5 < 1e-6 {
		c.LayerNormEps = 1e-5
	}
	return c, nil
}

func (g *onnxGraph) initShape(name string) []int64 {
	for n, t := range g.inits {
		if canonicalName(n) == name {
			return t.dims
		}
	}
	return nil
}

// headsOf returns h when the Reshape n splits the hidden size into
// [..., h, d] with h*d == hidden (the attention-head split), else 0.
func (g *onnxGraph) headsOf(n *onnxNode, hidden int) int {
	if len(n.inputs) < 2 {
		return 0
	}
	var shape []int64
	if t := g.constant(n.inputs[1]); t != nil {
		shape, _ = t.int64s()
	} else if c := g.producer[n.inputs[1]]; c != nil && c.op == "Concat" {
		for _, in := range c.inputs {
			t := g.constant(in)
			if t == nil {
				shape = append(shape, -1) // dynamic (batch, sequence)
				continue
			}
			v, ok := t.int64s()
			if !ok {
				return 0
			}
			shape = append(shape, v...)
		}
	}
	if len(shape) != 4 {
		return 0
	}
	h, d := shape[2], shape[3]
	if h > 1 && d > 1 && h*d == int64(hidden) {
		return int(h)
	}
	return 0
}

// readONNX reads the BERT weights and configuration of an ONNX file.
func readONNX(path string) (tensors, bertConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, bertConfig{}, fmt.Errorf("embed: %w", err)
	}
	g, err := parseONNX(b)
	if err != nil {
		return nil, bertConfig{}, fmt.Errorf("embed: %s: %v: %w", path, err, ErrCorrupt)
	}
	ts, cfg, err := g.bertTensors()
	if err != nil {
		return nil, cfg, fmt.Errorf("embed: %s: %v: %w", path, err, ErrCorrupt)
	}
	return ts, cfg, nil
}
