#include "SAvatarBridgeSourcePanel.h"

#include "IDetailsView.h"
#include "IStructureDetailsView.h"
#include "Modules/ModuleManager.h"
#include "PropertyEditorModule.h"
#include "UObject/StructOnScope.h"
#include "Widgets/Input/SButton.h"
#include "Widgets/Layout/SBox.h"
#include "Widgets/SBoxPanel.h"
#include "Widgets/Text/STextBlock.h"

#define LOCTEXT_NAMESPACE "SAvatarBridgeSourcePanel"

void SAvatarBridgeSourcePanel::Construct(const FArguments& InArgs)
{
	OnAddSource = InArgs._OnAddSource;

	FDetailsViewArgs DetailsArgs;
	DetailsArgs.bAllowSearch = false;
	DetailsArgs.NameAreaSettings = FDetailsViewArgs::HideNameArea;
	FStructureDetailsViewArgs StructArgs;
	SettingsScope = MakeShared<FStructOnScope>(FAvatarBridgeConnectionSettings::StaticStruct(), reinterpret_cast<uint8*>(&Settings));
	FPropertyEditorModule& PropertyEditor = FModuleManager::LoadModuleChecked<FPropertyEditorModule>("PropertyEditor");
	DetailsView = PropertyEditor.CreateStructureDetailView(DetailsArgs, StructArgs, SettingsScope);

	ChildSlot
	[
		SNew(SBox)
		.MinDesiredWidth(420.0f)
		[
			SNew(SVerticalBox)
			+ SVerticalBox::Slot()
			.AutoHeight()
			.Padding(4.0f)
			[
				SNew(STextBlock)
				.AutoWrapText(true)
				.Text(LOCTEXT("Help", "Start the bridge with `avatar-bridge serve`. Each session below becomes a Live Link subject; "
					"sessions other clients open appear too when observing is on."))
			]
			+ SVerticalBox::Slot()
			.FillHeight(1.0f)
			[
				DetailsView->GetWidget().ToSharedRef()
			]
			+ SVerticalBox::Slot()
			.AutoHeight()
			.HAlign(HAlign_Right)
			.Padding(4.0f)
			[
				SNew(SButton)
				.Text(LOCTEXT("Add", "Add"))
				.OnClicked(this, &SAvatarBridgeSourcePanel::OnAddClicked)
			]
		]
	];
}

FReply SAvatarBridgeSourcePanel::OnAddClicked() const
{
	OnAddSource.ExecuteIfBound(Settings);
	return FReply::Handled();
}

#undef LOCTEXT_NAMESPACE
