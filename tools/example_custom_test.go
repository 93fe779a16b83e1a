package tools_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/tools/example/weather"
)

// temperatures is the toy weather service of the example, in Celsius.
var temperatures = map[string]float64{"Paris": 18.5, "Oslo": -3}

// getWeather is the get_weather tool: it gets arguments already validated
// against weather.yaml's GetWeatherInput and bound to the Go type
// oapi-codegen generated from it.
func getWeather(_ context.Context, _ *tools.Env, in *weather.GetWeatherInput) (*weather.GetWeatherResult, error) {
	t, ok := temperatures[in.City]
	if !ok {
		return nil, tools.Errorf(gen.ErrorCodeHandlerFailed, "no weather station in %q", in.City)
	}
	unit := weather.UnitCelsius
	if in.Unit != nil && *in.Unit == weather.UnitFahrenheit {
		unit, t = weather.UnitFahrenheit, t*9/5+32
	}
	return &weather.GetWeatherResult{City: in.City, Temperature: t, Unit: unit}, nil
}

func renderWeather(_ *weather.GetWeatherInput, out *weather.GetWeatherResult) string {
	return fmt.Sprintf("%s: %.1f° %s\n", out.City, out.Temperature, out.Unit)
}

// A custom tool, spec-first: the tool is defined in the user's own OpenAPI
// document (weather.yaml), its Go types are generated from it, and the
// handler is bound to the tool by its input type, as the built-in tools
// are. The runtime offers it next to the built-in ones and validates its
// arguments against the user's schema before the handler runs.
func ExampleSpec_Register() {
	spec, err := tools.LoadSpec(weather.Spec)
	if err != nil {
		panic(err)
	}
	if err := spec.Register(tools.Func(tools.NeedsNothing, getWeather, renderWeather)); err != nil {
		panic(err)
	}
	rt, err := tools.New(tools.Config{Extra: []*tools.Spec{spec}})
	if err != nil {
		panic(err)
	}
	var names []string
	for _, s := range rt.Specs() {
		names = append(names, s.Name)
	}
	fmt.Println("tools:", strings.Join(names, ", "))
	for _, args := range []map[string]any{
		{"city": "Paris"},
		{"city": "Oslo", "unit": "fahrenheit"},
		{"city": "Oslo", "unit": "kelvin"},
		{"town": "Oslo"},
		{"city": "Atlantis"},
	} {
		obs, err := rt.Call(context.Background(), &gen.ToolCall{ToolName: "get_weather", Arguments: args})
		if err != nil {
			panic(err)
		}
		if obs.IsError {
			fmt.Printf("[%s] ", *obs.ErrorCode)
		}
		fmt.Println(strings.TrimSuffix(obs.Content, "\n"))
	}
	// Output:
	// tools: calculator, get_weather
	// Paris: 18.5° celsius
	// Oslo: 26.6° fahrenheit
	// [invalid_arguments] error: invalid arguments for get_weather: field "/unit": must be one of celsius, fahrenheit
	// [invalid_arguments] error: invalid arguments for get_weather: field "/town": is not allowed
	// [handler_failed] error: no weather station in "Atlantis"
}
